"""Unit tests of the preprocessing (ocr_pipeline.imaging), no Triton."""

import io

import numpy as np
import pytest
from PIL import Image

from ocr_pipeline import imaging

from tests.helpers import DATA, IMAGES
from tests.image_factory import (encode, marker_image, png_header_only, swapped_primaries_icc,
                            with_orientation)

WHITE = (255, 255, 255)


def decode_pixels(data: bytes) -> np.ndarray:
    image = imaging.decode_image(data)
    assert image.mode == "RGB"
    return np.asarray(image)


# -- resize and pad ------------------------------------------------------------------------

def test_downscale_keeps_aspect_and_pads_to_multiple_of_32():
    rgb = np.full((720, 1280, 3), 200, np.uint8)
    target_w, target_h, ratio = imaging.resized_size(1280, 720, 640)
    assert (target_w, target_h, ratio) == (640, 360, 0.5)
    padded = imaging.resize_and_pad(rgb, target_w, target_h, 640)
    assert padded.shape == (1, 384, 640, 3)     # 360 rows of image, padded up to 384
    assert padded.dtype == np.uint8
    assert (padded[0, :360] == 200).all()
    assert (padded[0, 360:] == 0).all()         # zero pixels below, before normalisation


def test_upscale_truncates_target_size_like_the_reference():
    target_w, target_h, ratio = imaging.resized_size(629, 420, 1280)
    assert ratio == pytest.approx(1280 / 629)
    assert (target_w, target_h) == (1280, 854)
    padded = imaging.resize_and_pad(np.zeros((420, 629, 3), np.uint8), target_w, target_h, 1280)
    assert padded.shape == (1, 864, 1280, 3)


def test_the_default_working_size_is_long_side_1280_up_to_3_to_1():
    from tests.helpers import reference_boxes

    for entry in reference_boxes(1280).values():          # every reference image: unchanged
        width, height = entry["width"], entry["height"]
        assert imaging.resized_size(width, height, None) == \
            imaging.resized_size(width, height, 1280)
    width, height, ratio = imaging.resized_size(3840, 1280, None)      # exactly 3:1
    assert (width, height, ratio) == (1280, 426, pytest.approx(1 / 3))


def test_a_long_page_keeps_its_short_side_within_the_pixel_budget():
    # A 600x4000 till roll: long side 1280 would make it 192 wide; the short side becomes
    # 1280 / 3, the long side follows.
    width, height, ratio = imaging.resized_size(600, 4000, None)
    assert (width, height) == (426, 2844) and ratio == pytest.approx(1280 / 3 / 600)
    # A 300x20000 roll: 1280 / 3 wide would be 12 MP; capped at 1280 x 1280 pixels.
    width, height, ratio = imaging.resized_size(300, 20000, None)
    assert width * height <= 1280 * 1280 and ratio == pytest.approx(1280 / (300 * 20000) ** 0.5)
    # An explicit long side is kept, whatever the shape.
    assert imaging.resized_size(600, 4000, 1280)[:2] == (192, 1280)


def test_a_pdf_page_is_rendered_and_prepared(tmp_path):
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    pdf.new_page(595, 842)
    path = tmp_path / "a4.pdf"
    pdf.save(path)
    prepared = imaging.prepare_image(path.read_bytes(), None)
    assert (prepared.width, prepared.height) == (1653, 2339)     # A4 at 200 dpi
    assert prepared.tensor.shape == (1, 1280, 928, 3)            # long side 1280, padded
    assert prepared.original.shape == (2339, 1653, 3) and (prepared.original == 255).all()
    with pytest.raises(imaging.DocumentDecodeError, match="no page 2"):
        imaging.prepare_image(path.read_bytes(), None, page=1)


def test_a_tiff_frame_is_picked_by_its_page():
    frames = [Image.new("RGB", (64, 48), "white"), Image.new("RGB", (80, 32), "black")]
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    second = imaging.prepare_image(out.getvalue(), 640, page=1)
    assert (second.width, second.height) == (80, 32) and (second.original == 0).all()
    with pytest.raises(imaging.ImageDecodeError, match="no page 3"):
        imaging.prepare_image(out.getvalue(), 640, page=2)


def test_square_canvas_is_long_side_by_long_side():
    target_w, target_h, ratio = imaging.resized_size(300, 100, 1000)
    padded = imaging.resize_and_pad(np.zeros((100, 300, 3), np.uint8), target_w, target_h,
                                    1000, square_canvas=True)
    assert padded.shape == (1, 1024, 1024, 3)
    assert ratio == pytest.approx(1000 / 300)


def test_the_canvas_is_the_environments_else_the_configs_else_fit():
    assert imaging.read_canvas({}, {}) == imaging.FIT_CANVAS == "fit"
    assert imaging.read_canvas({"canvas": "square"}, {}) == imaging.SQUARE_CANVAS == "square"
    assert imaging.read_canvas({"canvas": "square"}, {"OCR_CANVAS": "fit"}) == "fit"
    assert imaging.read_canvas({"canvas": "square"}, {"OCR_CANVAS": ""}) == "square"
    with pytest.raises(ValueError, match="canvas must be 'fit' or 'square', not 'round'"):
        imaging.read_canvas({"canvas": "round"}, {})


def test_prepare_image_on_a_real_file():
    prepared = imaging.prepare_image((IMAGES / "img_1.jpg").read_bytes(), 1280)
    assert (prepared.width, prepared.height) == (1280, 720)
    assert prepared.ratio == 1.0
    assert prepared.tensor.shape == (1, 736, 1280, 3) and prepared.tensor.dtype == np.uint8
    assert prepared.original.shape == (720, 1280, 3)


def test_a_big_jpeg_decodes_at_reduced_size_when_only_boxes_are_asked():
    upright = Image.open(IMAGES / "img_1.jpg").resize((3024, 4032), Image.Resampling.BICUBIC)
    data = with_orientation(upright, 6, "JPEG", quality=92)   # stored 4032 x 3024, rotated
    full = imaging.prepare_image(data, 1280)
    reduced = imaging.prepare_image(data, 1280, keep_original=False)
    # Rotated by EXIF: 3024 x 4032 upright, either way; the boxes map to those pixels.
    assert (full.width, full.height) == (reduced.width, reduced.height) == (3024, 4032)
    assert full.ratio == reduced.ratio == pytest.approx(1280 / 4032)
    assert reduced.original is None and full.original.shape == (4032, 3024, 3)
    assert full.tensor.shape == reduced.tensor.shape == (1, 1280, 960, 3)
    difference = np.abs(full.tensor.astype(int) - reduced.tensor.astype(int))
    assert difference.mean() < 2.0              # the same picture, resampled differently


def test_webp_with_a_jpg_name_decodes_from_its_content():
    image = imaging.decode_image((IMAGES / "idcard2_webp_named.jpg").read_bytes())
    assert image.size == (1000, 630)


# -- image modes ---------------------------------------------------------------------------

def test_rgba_transparency_is_composited_over_white():
    image = Image.new("RGBA", (16, 16), (0, 0, 0, 0))
    image.putpixel((1, 1), (0, 0, 0, 255))
    image.putpixel((2, 2), (0, 0, 0, 128))
    pixels = decode_pixels(encode(image))
    assert tuple(pixels[0, 0]) == WHITE
    assert tuple(pixels[1, 1]) == (0, 0, 0)
    assert 120 <= pixels[2, 2, 0] <= 130


def test_la_is_composited_over_white():
    image = Image.new("LA", (16, 16), (0, 0))
    image.putpixel((3, 3), (50, 255))
    pixels = decode_pixels(encode(image))
    assert tuple(pixels[0, 0]) == WHITE
    assert tuple(pixels[3, 3]) == (50, 50, 50)


def test_palette_with_transparent_index_is_white_there():
    image = Image.new("P", (16, 16), 0)
    image.putpalette([0, 0, 0, 128, 0, 0] + [0] * 762)        # dark red: stays on white
    image.putpixel((4, 4), 1)
    pixels = decode_pixels(encode(image, transparency=0))
    assert tuple(pixels[0, 0]) == WHITE
    assert tuple(pixels[4, 4]) == (128, 0, 0)


@pytest.mark.parametrize("name, background", [
    ("white_font_color_transparent.png", (0, 0, 0)),
    ("black_font_color_transparent.png", WHITE)])
def test_text_on_a_transparent_background_is_put_on_the_contrasting_colour(name, background):
    pixels = decode_pixels((DATA / "transparent" / name).read_bytes())
    alpha = np.asarray(Image.open(DATA / "transparent" / name))[..., 3]
    assert (pixels[alpha == 0] == background).all()
    text = pixels[alpha == 255]
    assert text.size and (np.abs(text.astype(int) - background).min(axis=1) == 255).all()


def test_light_pixels_in_a_mostly_opaque_image_keep_a_white_background():
    # A light photo with transparent corners (like images/example.png): still over white.
    image = Image.new("RGBA", (20, 20), (230, 230, 230, 255))
    for corner in ((0, 0), (19, 0), (0, 19), (19, 19)):
        image.putpixel(corner, (0, 0, 0, 0))
    pixels = decode_pixels(encode(image))
    assert tuple(pixels[0, 0]) == WHITE and tuple(pixels[5, 5]) == (230, 230, 230)


def test_light_text_on_a_transparent_background_is_put_on_black():
    image = Image.new("RGBA", (20, 20), (255, 255, 255, 0))     # transparent white
    for x in range(2, 18):
        image.putpixel((x, 10), (250, 250, 210, 255))          # a light yellow stroke
    pixels = decode_pixels(encode(image))
    assert tuple(pixels[0, 0]) == (0, 0, 0) and tuple(pixels[10, 5]) == (250, 250, 210)


def test_grayscale_and_bilevel_become_rgb():
    gray = Image.new("L", (16, 16), 77)
    assert tuple(decode_pixels(encode(gray))[5, 5]) == (77, 77, 77)
    bilevel = Image.new("1", (16, 16), 1)
    assert tuple(decode_pixels(encode(bilevel))[5, 5]) == WHITE


def test_16_bit_grayscale_png_is_scaled_not_clipped():
    array = np.zeros((8, 8), np.uint16)
    array[0, 0], array[1, 1] = 65535, 257 * 100
    image = Image.fromarray(array)
    assert image.mode == "I;16"
    pixels = decode_pixels(encode(image))
    assert tuple(pixels[0, 0]) == WHITE
    assert tuple(pixels[1, 1]) == (100, 100, 100)
    assert tuple(pixels[2, 2]) == (0, 0, 0)


def test_cmyk_jpeg_becomes_the_right_rgb():
    cmyk = Image.new("CMYK", (16, 16), (0, 255, 255, 0))  # no cyan, full magenta+yellow: red
    red, green, blue = decode_pixels(encode(cmyk, "JPEG", quality=95))[8, 8]
    assert red > 230 and green < 30 and blue < 30


def test_gif_and_tiff_give_their_first_frame():
    frames = [Image.new("RGB", (16, 16), c) for c in ((255, 0, 0), (0, 0, 255))]
    for fmt in ("GIF", "TIFF"):
        data = encode(frames[0], fmt, save_all=True, append_images=frames[1:])
        red, green, blue = decode_pixels(data)[8, 8]
        assert red > 200 and blue < 50, fmt


def test_an_embedded_icc_profile_is_converted_to_srgb():
    red = Image.new("RGB", (16, 16), (255, 0, 0))
    plain = decode_pixels(encode(red))
    described = decode_pixels(encode(red, icc_profile=swapped_primaries_icc()))
    assert tuple(plain[8, 8]) == (255, 0, 0)
    assert tuple(described[8, 8]) == (0, 255, 0)      # its profile says this red is green


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_gives_upright_rgb(orientation):
    upright = marker_image(40, 20)
    image = imaging.decode_image(with_orientation(upright, orientation))
    assert image.size == (40, 20)
    pixels = np.asarray(image)
    assert tuple(pixels[2, 2]) == (255, 0, 0)           # marker back at the top-left
    assert tuple(pixels[17, 37]) == WHITE


def test_exif_orientation_in_a_jpeg():
    data = with_orientation(marker_image(80, 40), 6, "JPEG", quality=95)
    pixels = np.asarray(imaging.decode_image(data))
    assert pixels.shape == (40, 80, 3)
    assert pixels[3, 3, 0] > 200 and pixels[3, 3, 1] < 60


# -- refusals ------------------------------------------------------------------------------

def test_truncated_jpeg_is_a_decode_error():
    with pytest.raises(imaging.ImageDecodeError):
        imaging.decode_image((DATA / "bad" / "truncated.jpg").read_bytes())


def test_half_a_jpeg_is_a_decode_error():
    data = (IMAGES / "img_1.jpg").read_bytes()
    with pytest.raises(imaging.ImageDecodeError):
        imaging.decode_image(data[: len(data) // 2])


def test_text_is_a_decode_error():
    with pytest.raises(imaging.ImageDecodeError):
        imaging.decode_image(b"hello, this is not an image")


def test_pixel_cap_refuses_a_bomb_before_decoding():
    with pytest.raises(imaging.ImageTooLargeError, match="pixels"):
        imaging.decode_image(png_header_only(30000, 30000), max_pixels=40_000_000)


def test_small_print_is_found_again_at_a_larger_side():
    # An A4 page at 300 dpi (2480 x 3508): the default working size is 1280 / 3508 of it.
    ratio = 1280 / 3508
    fine = np.full(40, 11 / ratio)                    # 11-pixel boxes at the default size
    assert imaging.small_print_side(fine, 2480, 3508) == 2080     # 1280 * 18 / 11, to 32
    assert imaging.small_print_side(np.full(40, 15 / ratio), 2480, 3508) is None
    assert imaging.small_print_side(fine[:19], 2480, 3508) is None     # a photo's few signs
    # Never past the image's own size, nor the largest long side a request may ask.
    assert imaging.small_print_side(np.full(40, 4.0), 1200, 1500) == 1472
    assert imaging.small_print_side(np.full(40, 2 / ratio), 2480, 3508) == 2560
    assert imaging.small_print_side(np.full(40, 4.0), 800, 1000) is None   # upscaled already
