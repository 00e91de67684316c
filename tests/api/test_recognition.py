"""Reading the text: POST /api/ocr with recognition, through the real embedded Triton (real
PP-OCRv6 and Tesseract models)."""

import io

import pytest
import tritonclient.grpc as grpcclient
from PIL import Image

from ocr_api.models import OcrRequest
from ocr_pipeline.text_evaluation import TextScore, load_text_truth, score_text, tokens
from tests.helpers import DATA, IMAGES, KOREAN_TEXT
from tests.image_factory import LETTER_FONTS, encode, text_page

pytestmark = [pytest.mark.django_db, pytest.mark.triton, pytest.mark.quality]


def post(client, data: bytes, **params):
    return client.post("/api/ocr", {"image": io.BytesIO(data), **params}, format="multipart")


def post_file(client, path, **params):
    return post(client, path.read_bytes(), **params)


def test_korean_reads_its_six_words_with_language_ko(api_client, live_triton):
    response = post_file(api_client, IMAGES / "korean.png", language="ko")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["text"] == KOREAN_TEXT
    assert sorted(box["text"] for box in body["boxes"]) == \
        sorted(["서울", "평양", "Seoul", "Pyeongyang", "56Km", "205Km"])
    assert all(0.5 < box["text_score"] <= 1 for box in body["boxes"])


def test_auto_recognises_hangul_by_itself(api_client, live_triton):
    body = post_file(api_client, IMAGES / "korean.png").json()
    assert body["text"] == KOREAN_TEXT


#: Turkish lines with the letters PP-OCR reads as Latin ones (ı, İ, ş, ğ): text of the test's
#: own, not the drawn pages Turkish's reader was chosen on (ocr_contract.languages).
TURKISH = [["Kuşlar", "ağaçta", "şarkı", "söylüyor"], ["İletişim", "Bilgileri"],
           ["Işıklı", "Sokağı", "No", "7"], ["Müşteri", "Sayısı", "14"]]


@pytest.mark.parametrize("language", ["tr", "auto"])
def test_turkish_keeps_its_dotless_i_dotted_i_s_cedilla_and_soft_g(api_client, live_triton,
                                                                   language):
    page = text_page(TURKISH, size=32, font_path=LETTER_FONTS[0])
    body = post(api_client, encode(page), language=language).json()
    # Compared lower-cased (Tesseract may read ş as Ş), where İ ("i̇") and I ("i"), ı and i
    # still differ: PP-OCR reads İletişim as iletişim and Sayısı as Sayisı.
    assert [line.lower() for line in body["text"].split("\n")] == [
        " ".join(line).lower() for line in TURKISH]


def test_quality_floors_on_the_shared_images(api_client, live_triton):
    # Measured at the defaults (language auto, long side 1280): complete-image F 1.000, the
    # other images' recall 0.818 (evaluate_recognition, 2026-12-05).
    complete, partial = TextScore(), TextScore()
    for truth in load_text_truth(DATA / "recognition" / "text_gt.json"):
        body = post_file(api_client, IMAGES / truth.image).json()
        (complete if truth.complete else partial).add(score_text(body["text"], truth.words))
    assert complete.f_score >= 0.97, complete
    assert partial.recall >= 0.75, partial


def test_an_image_without_text_answers_empty(api_client, live_triton):
    blank = Image.linear_gradient("L").resize((400, 300)).convert("RGB")
    response = post(api_client, encode(blank))
    assert response.status_code == 200
    assert (response.json()["boxes"], response.json()["text"]) == ([], "")


def test_a_dense_page_of_300_words(api_client, live_triton):
    vocabulary = ("Reduce your risk of infection clean hands with soap and water cover nose "
                  "mouth when coughing avoid close contact cook meat eggs thoroughly").split()
    lines = [[vocabulary[(row * 7 + i) % len(vocabulary)] for i in range(10)] for row in range(32)]
    response = post(api_client, encode(text_page(lines, size=22, word_gap=44)))
    assert response.status_code == 200
    body = response.json()
    words = [word for line in lines for word in line]
    assert len(words) == 320 and len(body["boxes"]) >= 300     # more than 9 recognizer batches
    score = score_text(body["text"], words)
    assert score.recall >= 0.97 and score.precision >= 0.97, score
    assert body["text"].count("\n") == len(lines) - 1           # one line of text per line


def test_vertical_text_is_read_from_tall_boxes(api_client, live_triton):
    page = text_page([["LIBRARY"], ["SCIENCE"], ["HISTORY"]], size=40, line_gap=60)
    spines = page.rotate(-90, expand=True)                      # read top to bottom
    body = post(api_client, encode(spines)).json()
    assert len(body["boxes"]) == 3
    assert body["image"]["angle"] == 90                          # the page turned clockwise
    for box in body["boxes"]:
        # corners from the text's own top-left: the first side runs down along the text
        (x0, y0), (x1, y1), (x2, y2), _ = box["points"]
        assert y1 - y0 >= 1.5 * abs(x2 - x1)
    assert tokens(body["text"]) == ["library", "science", "history"]   # the page's order


def recognizer_inferences(triton) -> dict:
    client = grpcclient.InferenceServerClient(triton.grpc_url)
    try:
        return {name: sum(int(s.get("inference_count", 0)) for s in client.get_inference_statistics(
            name, as_json=True)["model_stats"]) for name in ("recognizer", "tesseract")}
    finally:
        client.close()


def test_recognize_false_answers_boxes_only_and_skips_the_recognizers(api_client, live_triton):
    image = encode(text_page([["skip", "the", "reading"]]))
    before = recognizer_inferences(live_triton)
    response = post(api_client, image, recognize="false")
    assert recognizer_inferences(live_triton) == before
    body = response.json()
    assert response.status_code == 200 and "text" not in body and len(body["boxes"]) == 3
    assert all(set(box) == {"points", "score"} for box in body["boxes"])
    read = post(api_client, image).json()
    assert tokens(read["text"]) == ["skip", "the", "reading"]
    assert recognizer_inferences(live_triton)["recognizer"] > before["recognizer"]


def test_an_unknown_language_is_refused_with_the_supported_ones(api_client, live_triton):
    response = post_file(api_client, IMAGES / "korean.png", language="ko,xx")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_parameter", "language")
    assert "'xx' is not supported" in error["message"] and "ko, th, hi, ru" in error["message"]


def test_the_audit_log_counts_characters_and_never_keeps_the_text(api_client, live_triton):
    body = post_file(api_client, IMAGES / "korean.png", language="ko").json()
    row = OcrRequest.objects.get(request_id=body["request_id"])
    assert row.char_count == sum(len(box["text"]) for box in body["boxes"]) == 28
    assert row.parameters == {"language": "ko", "detector": "craft"}   # the one that read it
    stored = " ".join(str(value) for value in OcrRequest.objects.values_list().get(pk=row.pk))
    assert not any(word in stored for word in ("서울", "Seoul", "Pyeongyang"))


def test_the_batch_endpoint_reads_text_too(api_client, live_triton):
    files = [io.BytesIO((IMAGES / "korean.png").read_bytes()),
             io.BytesIO(encode(text_page([["batch", "text"]])))]
    results = api_client.post("/api/ocr/batch?language=ko", {"images": files},
                              format="multipart").json()["results"]
    assert results[0]["text"] == KOREAN_TEXT
    assert tokens(results[1]["text"]) == ["batch", "text"]
