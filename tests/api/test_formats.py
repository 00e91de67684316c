"""Every accepted format and image mode gives the same boxes as the same picture sent as PNG
(real embedded Triton). EXIF-rotated photos answer in the upright frame."""

import io

import numpy as np
import pytest
import simplejpeg
from PIL import Image

from tests.helpers import IMAGES, reference_boxes
from tests.image_factory import encode, heic, swapped_primaries_icc, with_orientation
from tests.parity import PARITY_F, parity_f

pytestmark = [pytest.mark.django_db, pytest.mark.triton]

PICTURE = Image.open(IMAGES / "korean.png").convert("RGB")   # 629 x 420, 6 words


def with_alpha(picture: Image.Image) -> Image.Image:
    """RGBA: the picture, with a transparent black 40-px frame (white once composited)."""
    rgba = picture.convert("RGBA")
    pixels = np.asarray(rgba).copy()
    pixels[:40, :], pixels[-40:, :], pixels[:, :40], pixels[:, -40:] = 0, 0, 0, 0
    return Image.fromarray(pixels, "RGBA")


def on_white(image: Image.Image) -> Image.Image:
    canvas = Image.new("RGBA", image.size, (255, 255, 255, 255))
    canvas.alpha_composite(image.convert("RGBA"))
    return canvas.convert("RGB")


def ycck_jpeg(picture: Image.Image) -> bytes:
    # Adobe CMYK JPEGs store inverted ink; libjpeg-turbo writes CMYK input as YCCK.
    inverted = 255 - np.asarray(picture.convert("CMYK"))
    return simplejpeg.encode_jpeg(np.ascontiguousarray(inverted), quality=95,
                                  colorspace="CMYK")


def big_exif() -> bytes:
    exif = Image.Exif()
    exif[0x010E] = "x" * 60_000      # ImageDescription: a ~60 KB APP1 segment
    return exif.tobytes()


def quantized(picture: Image.Image) -> Image.Image:
    return picture.quantize(256).convert("RGB")


def gray16(picture: Image.Image) -> Image.Image:
    return Image.fromarray(np.asarray(picture.convert("L")).astype(np.uint16) * 257)


def palette_with_transparency(picture: Image.Image) -> tuple[bytes, Image.Image]:
    palette = with_alpha(picture).quantize(255)  # RGBA quantize keeps alpha in the palette
    return encode(palette), on_white(palette.convert("RGBA"))


TIFF_PAGES = [PICTURE, Image.new("RGB", PICTURE.size, "black")]
GIF_FRAMES = [quantized(PICTURE), Image.new("RGB", PICTURE.size, "black")]

# name -> (bytes sent, the same picture as the RGB image whose PNG is the baseline, format)
CASES = {
    "baseline jpeg": (encode(PICTURE, "JPEG", quality=95), PICTURE, "JPEG"),
    "progressive jpeg": (encode(PICTURE, "JPEG", quality=95, progressive=True), PICTURE, "JPEG"),
    # Stored with red and green exchanged, and a profile that says so: only a real colour
    # conversion shows the picture.
    "jpeg with icc profile": (encode(Image.merge("RGB", [PICTURE.getchannel(c) for c in "GRB"]),
                                     "JPEG", quality=95, icc_profile=swapped_primaries_icc()),
                              PICTURE, "JPEG"),
    "jpeg with 60 KB exif": (encode(PICTURE, "JPEG", quality=95, exif=big_exif()),
                             PICTURE, "JPEG"),
    "cmyk jpeg": (encode(PICTURE.convert("CMYK"), "JPEG", quality=95),
                  PICTURE.convert("CMYK").convert("RGB"), "JPEG"),
    "ycck jpeg": (ycck_jpeg(PICTURE), PICTURE.convert("CMYK").convert("RGB"), "JPEG"),
    "grayscale jpeg": (encode(PICTURE.convert("L"), "JPEG", quality=95),
                       PICTURE.convert("L").convert("RGB"), "JPEG"),
    "webp": (encode(PICTURE, "WEBP", quality=95), PICTURE, "WEBP"),
    "bmp": (encode(PICTURE, "BMP"), PICTURE, "BMP"),
    "tiff pages": (encode(TIFF_PAGES[0], "TIFF", save_all=True,
                               append_images=TIFF_PAGES[1:]), PICTURE, "TIFF"),
    "gif first frame": (encode(GIF_FRAMES[0], "GIF", save_all=True,
                               append_images=GIF_FRAMES[1:]), GIF_FRAMES[0], "GIF"),
    "heic": (heic(PICTURE), PICTURE, "HEIC"),
    "grayscale png": (encode(PICTURE.convert("L")), PICTURE.convert("L").convert("RGB"), "PNG"),
    "16-bit png": (encode(gray16(PICTURE)), PICTURE.convert("L").convert("RGB"), "PNG"),
    "rgba png": (encode(with_alpha(PICTURE)), on_white(with_alpha(PICTURE)), "PNG"),
    "la png": (encode(with_alpha(PICTURE).convert("LA")),
               on_white(with_alpha(PICTURE).convert("LA")), "PNG"),
    "palette png with transparency": (*palette_with_transparency(PICTURE), "PNG"),
}


def ocr(client, data: bytes) -> dict:
    """Boxes only, at long side 640: what is compared here is decoding, not the model."""
    response = client.post("/api/ocr?long_side=640&recognize=false",
                           {"image": io.BytesIO(data)}, format="multipart")
    assert response.status_code == 200, response.json()
    return response.json()


def points(body) -> list:
    return [box["points"] for box in body["boxes"]]


@pytest.mark.parametrize("name", sorted(CASES))
def test_format_gives_the_same_boxes_as_png(api_client, live_triton, name):
    data, same_picture, fmt = CASES[name]
    sent = ocr(api_client, data)
    baseline = ocr(api_client, encode(same_picture, "PNG"))
    if "pages" in sent:                        # a multi-page TIFF: its first page is the picture
        assert sent["document"] == {"format": fmt, "pages": len(TIFF_PAGES)}
        first = sent["pages"][0]
        sent = {**first, "image": {"width": first["width"], "height": first["height"],
                                   "format": fmt, "angle": first["angle"]}}
    assert sent["image"] == {"width": 629, "height": 420, "format": fmt, "angle": 0}
    assert len(baseline["boxes"]) >= 5
    assert parity_f(points(sent), points(baseline)) >= PARITY_F, (points(sent),
                                                                 points(baseline))


@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_exif_rotated_photo_answers_in_the_upright_frame(api_client, live_triton, orientation):
    body = ocr(api_client, with_orientation(PICTURE, orientation, "JPEG", quality=95))
    assert (body["image"]["width"], body["image"]["height"]) == (629, 420)
    assert parity_f(points(body), reference_boxes(640)["korean.png"]["boxes"]) >= PARITY_F
