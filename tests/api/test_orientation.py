"""Turned pages and an upside-down line through POST /api/ocr and a real embedded Triton: the
angle found, the boxes in the uploaded image's pixels (the upright answer's boxes turned),
corners from each text's own top-left, the same text (ocr_pipeline.orientation)."""

import io

import numpy as np
import pytest
from PIL import Image

from ocr_pipeline.evaluation import match, polygon
from ocr_pipeline.imaging import turned_png

from tests.helpers import DATA, IMAGES
from tests.parity import PARITY_F, PARITY_IOU, parity_f

pytestmark = [pytest.mark.django_db, pytest.mark.triton]
LONG_SIDE = 640


def post(client, data: bytes, **params):
    response = client.post("/api/ocr", {"image": io.BytesIO(data), "long_side": LONG_SIDE,
                                        **params}, format="multipart")
    assert response.status_code == 200, response.json()
    return response.json()


def turned_points(points, angle: int, width: int, height: int) -> np.ndarray:
    """Points of an upright ``width x height`` image after turning it ``angle`` clockwise
    (as ``np.rot90(image, k=-angle // 90)`` moves its pixels)."""
    p = np.asarray(points, np.float64)
    x, y = p[..., 0], p[..., 1]
    return np.stack({90: (height - y, x), 180: (width - x, height - y),
                     270: (y, width - x)}[angle], axis=-1)


@pytest.fixture(scope="module")
def upright(django_db_blocker):
    """The upright answers (filled by the first test of each image)."""
    return {}


def upright_answer(api_client, upright: dict, name: str) -> dict:
    if name not in upright:
        upright[name] = post(api_client, turned_png((IMAGES / name).read_bytes(), 0))
    return upright[name]


@pytest.mark.parametrize("name", ["english.png", "idcard.png"])
@pytest.mark.parametrize("angle", [90, 180, 270])
def test_a_turned_image_is_read_as_upright(api_client, live_triton, upright, name, angle):
    base = upright_answer(api_client, upright, name)
    assert base["image"]["angle"] == 0
    width, height = base["image"]["width"], base["image"]["height"]
    body = post(api_client, turned_png((IMAGES / name).read_bytes(), angle))

    assert body["image"]["angle"] == angle
    assert (body["image"]["width"], body["image"]["height"]) == \
        ((width, height) if angle == 180 else (height, width))
    expected = [turned_points(box["points"], angle, width, height) for box in base["boxes"]]
    found = [box["points"] for box in body["boxes"]]
    assert parity_f(found, expected) >= PARITY_F
    assert sorted(box["text"] for box in body["boxes"]) == \
        sorted(box["text"] for box in base["boxes"])
    assert body["text"] == base["text"]
    # Each box starts at its text's own top-left: the upright box's first corner, turned.
    pairs = match([polygon(b) for b in found], [polygon(b) for b in expected], PARITY_IOU)
    for i, j in pairs:
        corners = np.asarray(found[i])
        size = min(np.linalg.norm(corners[0] - corners[3]), np.linalg.norm(corners[0] - corners[1]))
        assert np.linalg.norm(corners[0] - expected[j][0]) < 0.5 * size, (found[i], expected[j])


def test_orientation_upright_skips_the_work(api_client, live_triton):
    body = post(api_client, turned_png((IMAGES / "english.png").read_bytes(), 180),
                orientation="upright")
    assert body["image"]["angle"] == 0
    assert "Reduce your risk" not in body["text"]


def test_an_unknown_orientation_is_refused(api_client, live_triton):
    response = api_client.post("/api/ocr?orientation=sideways",
                               {"image": io.BytesIO((IMAGES / "english.png").read_bytes())},
                               format="multipart")
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["field"]) == \
        (400, "invalid_parameter", "orientation")


def test_an_upside_down_line_on_an_upright_page(api_client, live_triton, upright):
    """english.png with one of its lines turned upside down in place: the page stays at 0,
    that line's boxes start from their bottom-right corner (their text's top-left), and the
    line reads as on the original."""
    base = upright_answer(api_client, upright, "english.png")
    line = next(line for line in base["lines"] if line["text"].startswith("Clean hands"))
    xs = [p[0] for p in line["points"]]
    ys = [p[1] for p in line["points"]]
    left, top = int(min(xs)) - 2, int(min(ys)) - 2
    right, bottom = int(max(xs)) + 3, int(max(ys)) + 3
    pixels = np.array(Image.open(IMAGES / "english.png").convert("RGB"))
    pixels[top:bottom, left:right] = pixels[top:bottom, left:right][::-1, ::-1]
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")

    body = post(api_client, out.getvalue())
    assert body["image"]["angle"] == 0
    assert line["text"] in body["text"].splitlines()
    flipped = next(found for found in body["lines"] if found["text"] == line["text"])
    for index in flipped["boxes"]:
        corners = np.asarray(body["boxes"][index]["points"])
        # text's top-left is the box's bottom-right in the image: largest x + y
        assert np.argmax(corners.sum(axis=1)) == 0
    others = [found["text"] for found in body["lines"] if found is not flipped]
    assert others == [old["text"] for old in base["lines"] if old is not line]


def craft_inferences(triton) -> int:
    """Requests craft has run so far, the ensemble's step and recognize's BLS calls together
    (Triton's statistics)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(triton.grpc_url)
    try:
        stats = client.get_inference_statistics("craft", as_json=True)["model_stats"]
    finally:
        client.close()
    return sum(int(model.get("inference_count", 0)) for model in stats)


@pytest.mark.quality
def test_a_turned_dense_page_is_detected_once_and_read_as_its_upright_copy(api_client,
                                                                          live_triton):
    """linn.pdf's page at 200 dpi, upright and turned 90 and 270 degrees clockwise: preprocess
    turns a turned page upright before detection (ocr_pipeline.page_turn), so CRAFT runs once
    per page, not twice, and the turned pages read as the upright one, their boxes and words
    the upright ones' turned. (Upright, its boxes' median height at 1280 is 15.9 px, not small
    print; turned, CRAFT's boxes were fragments, 14.0 px, which once called for small print's
    larger size.)"""
    import pypdfium2 as pdfium
    from ocr_contract.limits import PDF_DPI

    page = pdfium.PdfDocument(DATA / "documents" / "ocrmypdf_linn.pdf")[0]
    image = page.render(scale=PDF_DPI.default / 72).to_pil().convert("RGB")
    answers, detections = [], []
    for turned in (image, image.transpose(Image.Transpose.ROTATE_270),
                   image.transpose(Image.Transpose.ROTATE_90)):
        data = io.BytesIO()
        turned.save(data, "PNG")
        before = craft_inferences(live_triton)
        response = api_client.post("/api/ocr", {"image": io.BytesIO(data.getvalue())},
                                   format="multipart")
        assert response.status_code == 200, response.json()
        detections.append(craft_inferences(live_triton) - before)
        answers.append(response.json())
    assert [answer["image"]["angle"] for answer in answers] == [0, 90, 270]
    # Once per page (twice where small print is found again: the count then depends on the
    # precision this CPU serves), and never more for a turned page than the upright one.
    assert detections == [detections[0]] * 3 and detections[0] in (1, 2)
    assert answers[1]["text"] == answers[0]["text"]
    assert answers[2]["text"] == answers[0]["text"]
    # (82 boxes here; the count depends on the precision auto serves on this CPU.)
    assert len(answers[1]["boxes"]) == len(answers[2]["boxes"]) == len(answers[0]["boxes"])
    width, height = answers[0]["image"]["width"], answers[0]["image"]["height"]
    words = [[word["text"] for line in answer["lines"] for word in line["words"]]
             for answer in answers]
    assert words[1] == words[2] == words[0]
    for answer, angle in ((answers[1], 90), (answers[2], 270)):
        assert (answer["image"]["width"], answer["image"]["height"]) == (height, width)
        expected = [turned_points(box["points"], angle, width, height)
                    for box in answers[0]["boxes"]]
        assert parity_f([box["points"] for box in answer["boxes"]], expected) >= PARITY_F
        # The words come back in the uploaded image's pixels too: the upright ones' turned,
        # corner for corner (each from its text's own top-left).
        found = np.array([word["points"] for line in answer["lines"] for word in line["words"]])
        upright_words = [word["points"] for line in answers[0]["lines"] for word in line["words"]]
        turned_words = np.array([turned_points(points, angle, width, height)
                                 for points in upright_words])
        assert np.abs(found - turned_words).max() <= 1.5


def test_orientation_upright_leaves_a_sideways_page_as_it_lies(api_client, live_triton):
    """With orientation=upright, preprocess does not turn a page whose lines run vertically:
    english.png turned 270 is read as it lies (its lines, turned, do not read)."""
    body = post(api_client, turned_png((IMAGES / "english.png").read_bytes(), 270),
                orientation="upright")
    assert body["image"]["angle"] == 0
    assert (body["image"]["width"], body["image"]["height"]) == (480, 905)
    assert "Reduce your risk" not in body["text"]
