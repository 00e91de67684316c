"""Documents through POST /api/ocr and a real embedded Triton: PDF and multi-page TIFF pages,
lines and paragraphs, the text / hOCR / searchable-PDF formats, the page limit and broken
documents, and pages counted as images.

Each document is read once per module (the session Triton's response cache answers the same
upload again, so the other formats cost no second OCR)."""

import io
import json
import xml.etree.ElementTree as ET

import pypdfium2 as pdfium
import pytest
from PIL import Image

from ocr_api.models import OcrRequest
from ocr_pipeline.imaging import turned_png
from ocr_pipeline.text_evaluation import load_text_truth, score_text
from tests.helpers import DATA, IMAGES, blank_pdf, pdftotext, pdftotext_words
from tests.image_factory import images_pdf

pytestmark = [pytest.mark.django_db, pytest.mark.triton]
DOCUMENTS = DATA / "documents"
TRUTH = {truth.image: truth for truth in load_text_truth(DATA / "recognition" / "text_gt.json")}
XHTML = "{http://www.w3.org/1999/xhtml}"


def two_page_pdf() -> bytes:
    """english.png and idcard.png as the two pages of a PDF (96 dpi images)."""
    return images_pdf([Image.open(IMAGES / name) for name in ("english.png", "idcard.png")])


def post(client, data: bytes, content_type: str, query: str = ""):
    return client.post(f"/api/ocr{query}", data, content_type=content_type)


@pytest.fixture(scope="module")
def two_pages():
    return two_page_pdf()


@pytest.fixture
def answer(api_client, live_triton, two_pages):
    response = post(api_client, two_pages, "application/pdf")
    assert response.status_code == 200, response.json()
    return response


def test_a_two_page_pdf_reads_each_page_as_its_image_alone(answer):
    body = answer.json()
    assert set(body) == {"request_id", "model", "document", "text", "pages", "timing_ms"}
    assert body["document"] == {"format": "PDF", "pages": 2}
    first, second = body["pages"]
    assert (first["page"], second["page"]) == (1, 2)
    # 905x480 and 786x500 pixels at 96 dpi, rendered at 200 dpi.
    assert (first["width"], first["height"]) == (1885, 1000)
    assert (second["width"], second["height"]) == (1638, 1042)
    assert score_text(first["text"], TRUTH["english.png"].words).f_score >= 0.95
    assert score_text(second["text"], TRUTH["idcard.png"].words).recall >= 0.80
    assert body["text"] == first["text"] + "\f" + second["text"]


def test_lines_are_the_lines_of_the_text_and_paragraphs_group_them(answer):
    page = answer.json()["pages"][0]
    assert "\n".join(line["text"] for line in page["lines"] if line["text"]) == page["text"]
    indices = [i for line in page["lines"] for i in line["boxes"]]
    assert sorted(indices) == list(range(len(page["boxes"])))          # every box once
    for line in page["lines"]:
        assert line["text"] == " ".join(page["boxes"][i]["text"] for i in line["boxes"]
                                        if page["boxes"][i]["text"])
        xs = [p[0] for i in line["boxes"] for p in page["boxes"][i]["points"]]
        assert min(p[0] for p in line["points"]) <= min(xs) + 1
        assert max(p[0] for p in line["points"]) >= max(xs) - 1
    assert sorted(i for p in page["paragraphs"] for i in p["lines"]) == \
        list(range(len(page["lines"])))
    # english.png: a title, then six blocks of one or two lines beside their pictures.
    assert page["paragraphs"][0]["text"] == "Reduce your risk of coronavirus infection:"
    assert 5 <= len(page["paragraphs"]) <= 9


def test_pages_count_as_images_in_the_audit_log_and_the_quota(api_client, live_triton,
                                                              api_key, two_pages):
    key = api_key[0]
    key.daily_quota = 3
    key.save()
    assert post(api_client, two_pages, "application/pdf").status_code == 200
    row = OcrRequest.objects.get(api_key=key)
    assert (row.page_count, row.image_format, row.http_status) == (2, "PDF", 200)
    assert row.char_count > 300 and row.box_count == 31
    again = post(api_client, two_pages, "application/pdf")          # 2 more pages: over 3
    assert (again.status_code, again.json()["error"]["code"]) == (429, "quota_exceeded")
    image = post(api_client, (IMAGES / "korean.png").read_bytes(), "image/png",
                 "?long_side=640&recognize=false")
    assert image.status_code == 200                                   # the third image fits


def test_text_format_is_the_whole_text(api_client, answer, two_pages):
    response = post(api_client, two_pages, "application/pdf", "?format=text")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == answer.json()["text"] + "\n"


def test_hocr_format_parses_with_every_word_and_its_box(api_client, answer, two_pages, tmp_path):
    from ocrmypdf.hocrtransform import HocrParser

    response = post(api_client, two_pages, "application/pdf", "?format=hocr")
    assert response["Content-Type"] == "application/xhtml+xml; charset=utf-8"
    root = ET.fromstring(response.content)
    pages = root.findall(f".//{XHTML}div[@class='ocr_page']")
    assert [p.get("title") for p in pages] == ["bbox 0 0 1885 1000; ppageno 0; scan_res 200 200",
                                               "bbox 0 0 1638 1042; ppageno 1; scan_res 200 200"]
    words = pages[0].findall(f".//{XHTML}span[@class='ocrx_word']")
    expected = answer.json()["pages"][0]
    assert [w.text for w in words] == [word["text"] for line in expected["lines"]
                                       for word in line["words"]]
    first_word = expected["lines"][0]["words"][0]["points"]
    assert words[0].get("title").startswith(
        f"bbox {round(min(p[0] for p in first_word))} {round(min(p[1] for p in first_word))} ")
    assert len(pages[0].findall(f".//{XHTML}p[@class='ocr_par']")) == len(expected["paragraphs"])
    # ocrmypdf, a reader of hOCR, takes it too.
    single = tmp_path / "page.hocr"
    single.write_bytes(response.content)
    parsed = HocrParser(single).parse()
    assert parsed.dpi == 200 and parsed.bbox.width == 1885


def test_searchable_pdf_gives_the_same_pages_back_and_pdftotext_finds_the_words(
        api_client, answer, two_pages, tmp_path):
    response = post(api_client, two_pages, "application/pdf", "?format=pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    out = pdfium.PdfDocument(response.content)
    source = pdfium.PdfDocument(two_pages)
    assert [out[i].get_size() for i in range(len(out))] == \
        [source[i].get_size() for i in range(len(source))]
    pages = pdftotext(response.content, tmp_path).split("\f")
    assert score_text(pages[0], TRUTH["english.png"].words).f_score >= 0.95
    assert score_text(pages[1], TRUTH["idcard.png"].words).recall >= 0.80
    # A word sits where it was read: "Reduce" at the top left of page 1, in points.
    word = pdftotext_words(response.content, tmp_path)[0]
    box = answer.json()["pages"][0]["boxes"][0]["points"]
    scale = 72 / 200
    assert word["text"] == "Reduce"
    assert abs(word["xMin"] - box[0][0] * scale) < 3
    assert abs(word["yMin"] - min(p[1] for p in box) * scale) < 4


def test_a_searchable_pdf_of_an_image_is_the_image_with_its_words(api_client, live_triton,
                                                                  tmp_path):
    data = (IMAGES / "english.png").read_bytes()
    response = post(api_client, data, "image/png", "?format=pdf")
    assert response.status_code == 200
    out = pdfium.PdfDocument(response.content)
    assert len(out) == 1 and out[0].get_size() == pytest.approx((905 * 0.75, 480 * 0.75))
    assert score_text(pdftotext(response.content, tmp_path),
                      TRUTH["english.png"].words).f_score >= 0.95


def test_a_searchable_pdf_of_a_turned_page_has_its_words_turned_with_it(api_client, live_triton,
                                                                       tmp_path):
    """english.png turned 90 degrees clockwise (a page photographed sideways): the page stays
    as sent, and its words run down it in the text layer, where they were read."""
    turned = turned_png((IMAGES / "english.png").read_bytes(), 90)
    assert post(api_client, turned, "image/png").json()["image"]["angle"] == 90
    response = post(api_client, turned, "image/png", "?format=pdf")
    assert response.status_code == 200
    assert pdfium.PdfDocument(response.content)[0].get_size() == \
        pytest.approx((480 * 0.75, 905 * 0.75))
    assert score_text(pdftotext(response.content, tmp_path),
                      TRUTH["english.png"].words).f_score >= 0.95


def test_a_searchable_pdf_holds_every_script_read(api_client, live_triton, tmp_path):
    """korean.png (a road sign: Hangul, Latin, digits): the text layer gives back exactly the
    words of the answer."""
    data = (IMAGES / "korean.png").read_bytes()
    words = post(api_client, data, "image/png").json()["text"].split()
    hangul = [word for word in words if all("\uac00" <= c <= "\ud7a3" for c in word)]
    assert len(words) == 6 and len(hangul) == 2
    response = post(api_client, data, "image/png", "?format=pdf")
    assert sorted(pdftotext(response.content, tmp_path).split()) == sorted(words)


def test_a_born_digital_pdf_is_read_and_keeps_its_own_text_layer(api_client, live_triton,
                                                                 tmp_path):
    """pypdfium2's text.pdf (two pages of Lorem ipsum set in a font): read like any page; its
    searchable PDF is the file itself, not a second copy of every word."""
    data = (DOCUMENTS / "pypdfium2_text.pdf").read_bytes()
    source = pdfium.PdfDocument(data)
    truth = " ".join(source[i].get_textpage().get_text_range() for i in range(len(source)))
    body = post(api_client, data, "application/pdf").json()
    assert [(p["width"], p["height"]) for p in body["pages"]] == [(1654, 2339)] * 2   # A4
    assert score_text(body["text"], truth.split()).f_score >= 0.95
    searchable = post(api_client, data, "application/pdf", "?format=pdf").content
    assert pdftotext(searchable, tmp_path).split() == pdftotext(data, tmp_path).split()


@pytest.mark.parametrize("name", ["ocrmypdf_linn.pdf", "ocrmypdf_skew.pdf"])
def test_a_scanned_page_reads_its_two_columns(api_client, live_triton, name):
    """ocrmypdf's linn.pdf: a 1985 product sheet scanned at 200 dpi (its text: linn.txt); its
    skew.pdf: the same scan tilted about 2.5 degrees."""
    body = post(api_client, (DOCUMENTS / name).read_bytes(), "application/pdf").json()
    truth = (DOCUMENTS / "ocrmypdf_linn.txt").read_text().split()
    score = score_text(body["text"], truth)
    assert score.f_score >= 0.90, score                    # measured 0.96
    # Its middle section's two columns, the left one first, each line its own (the link
    # refiner joins four of their lines across the narrow gutter; they are cut there).
    lines = body["text"].splitlines()

    def line(start: str) -> int:
        return next(i for i, text in enumerate(lines) if text.startswith(start))
    assert line("To record a sequence") < line("sustain pedal") < line("tion. To overdub") \
        < line("simply use LOCATE") < line("music. See your Linn") < line("Additional Features")
    assert lines[line("To record a sequence")].endswith("RECORD and PLAY,")
    assert "interferes" not in lines[line("the note to be erased")]


def test_a_long_receipt_reads_at_the_defaults(api_client, live_triton):
    """600x4000, 22-pixel type: scaling its long side to 1280 would shrink the type to 7
    pixels; the default working size keeps the short side at 1280 / 3."""
    body = post(api_client, (DOCUMENTS / "receipt_600x4000.png").read_bytes(), "image/png").json()
    words = json.loads((DOCUMENTS / "receipt_600x4000.json").read_text())["words"]
    assert score_text(body["text"], words).f_score >= 0.95
    assert "TOTAL" in body["text"] and len(body["lines"]) >= 60


def test_a_multi_page_tiff_answers_its_pages(api_client, live_triton):
    frames = [Image.open(IMAGES / name).convert("RGB") for name in ("korean.png", "img_4.jpg")]
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:])
    body = post(api_client, out.getvalue(), "image/tiff", "?long_side=640").json()
    assert body["document"] == {"format": "TIFF", "pages": 2}
    assert [(p["width"], p["height"]) for p in body["pages"]] == [(629, 420), (1280, 720)]
    assert "Seoul" in body["pages"][0]["text"]


def test_the_batch_endpoint_reads_pdfs_beside_images(api_client, live_triton, two_pages):
    response = api_client.post("/api/ocr/batch?long_side=640&recognize=false", {"images": [
        io.BytesIO(two_pages), io.BytesIO((IMAGES / "korean.png").read_bytes())]},
        format="multipart")
    first, second = response.json()["results"]
    assert (first["status"], first["document"]["pages"], len(first["pages"])) == (200, 2, 2)
    assert (second["status"], second["image"]["format"], len(second["boxes"])) == (200, "PNG", 6)


# -- refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("data, status, code", [
    (blank_pdf(200), 413, "too_many_pages"),
    (blank_pdf(0), 400, "document_empty"),
    ((DOCUMENTS / "pypdfium2_encrypted.pdf").read_bytes(), 400, "document_encrypted"),
    ((DOCUMENTS / "ocrmypdf_invalid.pdf").read_bytes(), 400, "document_undecodable"),
    (b"%PDF-1.7\n" + b"\x00" * 5000, 400, "document_undecodable"),
], ids=["200 pages", "no page", "encrypted", "header then EOF", "header then zeros"])
def test_documents_that_cannot_be_read_are_refused_before_triton(api_client, live_triton,
                                                                 data, status, code):
    response = post(api_client, data, "application/pdf")
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    if code == "too_many_pages":
        assert response.json()["error"]["message"] == (
            "The document has 200 pages; this endpoint reads at most 4. Send it to POST "
            "/api/jobs, which reads a document of up to 1000 pages (the gateway's "
            "OCR_JOB_MAX_PAGES) as a job in the background, or here in parts of up to 4 pages "
            "(OCR_MAX_PAGES).")
        assert response["Link"] == '</api/jobs>; rel="alternate"'
    row = OcrRequest.objects.get(request_id=response.json()["request_id"])
    assert (row.http_status, row.error_code, row.inference_ms) == (status, code, None)


def test_a_page_over_the_limit_in_a_tiff_is_found_without_decoding_it(api_client, live_triton,
                                                                      settings):
    settings.OCR_MAX_PAGES = 3
    frame = Image.new("RGB", (64, 64), "white")
    out = io.BytesIO()
    frame.save(out, "TIFF", save_all=True, append_images=[frame] * 4)
    response = post(api_client, out.getvalue(), "image/tiff")
    assert (response.status_code, response.json()["error"]["code"]) == (413, "too_many_pages")
    assert "more than 3 pages" in response.json()["error"]["message"]
