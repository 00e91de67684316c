"""The OCRmyPDF plugin (``ocrmypdf_plugin/``, issue 57) run as users run it: the real
``ocrmypdf`` command (PyPI's, with Debian's Ghostscript) with ``--plugin ocrmypdf_ocr_gateway``,
against the real gateway (gunicorn, Redis, the session's Triton: tests/jobs/conftest.py).

What each page says is checked against the service's own answer for the very image OCRmyPDF
sent (OCRmyPDF keeps its page images with ``-k``; they are posted to ``/api/ocr`` again), so the
tests assert that the plugin carries the service's text and boxes into the PDF, not the model's
quality (tests/api covers that)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pikepdf
import pypdfium2 as pdfium
import pytest

from ocr_inference.client import TritonClient
from tests.helpers import DATA, pdftotext, pdftotext_words
from tests.image_factory import LETTER, encode, images_pdf, letter_page
from tests.jobs.conftest import running_jobs_stack

pytestmark = [pytest.mark.triton, pytest.mark.slow]

PLUGIN = "ocrmypdf_ocr_gateway"
#: The scans: OCRmyPDF's linn.pdf (a 1985 product sheet at 200 dpi) and skew.pdf (the same
#: scan tilted 2.5 degrees).
SCANS = [DATA / "documents" / "ocrmypdf_linn.pdf", DATA / "documents" / "ocrmypdf_skew.pdf"]


@pytest.fixture(scope="module")
def stack(triton, tmp_path_factory):
    with running_jobs_stack(triton, tmp_path_factory.mktemp("ocrmypdf-stack")) as running:
        yield running


def ocrmypdf(stack, work: Path, *args: str, key: str | None = None,
             url: str | None = None) -> subprocess.CompletedProcess:
    """``ocrmypdf --plugin ocrmypdf_ocr_gateway -k <args>`` pointed at ``stack`` through the
    environment, its temporary folder (kept, ``-k``) under ``work``."""
    (work / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(work / "tmp"),
           "OCR_GATEWAY_URL": url or stack.url(""),
           "OCR_GATEWAY_KEY": stack.keys["a"] if key is None else key}
    return subprocess.run([sys.executable, "-m", "ocrmypdf", "--plugin", PLUGIN, "-k", *args],
                          env=env, cwd=work, capture_output=True, text=True, timeout=600,
                          check=False)


def sent_images(work: Path) -> list[Path]:
    """The page images OCRmyPDF sent to the engine (``NNNNNN_ocr.png``), in page order."""
    [folder] = (work / "tmp").glob("ocrmypdf.io.*")
    return sorted(folder.glob("*_ocr.png"))


def service_answer(stack, image: Path) -> dict:
    """The service's JSON answer for one image, asked as the plugin asks (``language=en``)."""
    response = stack.request("POST", "/api/ocr", "a", fields={
        "image": (image.name, image.read_bytes(), "image/png"), "language": "en"})
    assert response.status == 200, response.data[:500]
    return response.json()


def squeezed(text: str) -> str:
    """``text`` NFKC-normalised (as OCRmyPDF's text layer writes it: ``½`` is ``1⁄2``) without
    whitespace (pdftotext infers spaces from the gaps between glyphs)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def on_its_box(word: tuple, box: tuple) -> bool:
    """Whether a text-layer word (``(x0, y0, x1, y1)``, pixels) lies on the service's box for
    it: the same horizontal extent (overlap >= 80 % of their union) and the box's middle inside
    the word's height (a text layer's word is as tall as its font's ascent and descent, the box
    as its ink)."""
    overlap = min(word[2], box[2]) - max(word[0], box[0])
    union = max(word[2], box[2]) - min(word[0], box[0])
    return overlap >= 0.8 * union and word[1] <= (box[1] + box[3]) / 2 <= word[3]


def words_on_their_boxes(pdf: bytes, page: int, answer: dict, dpi: float,
                         tmp_path: Path) -> float:
    """The share of ``pdftotext -bbox``'s words on ``page`` (from 1) that lie on a word of the
    service's ``answer`` with the same text (:func:`on_its_box`, in the image's pixels at
    ``dpi``)."""
    boxes: dict[str, list[tuple]] = {}
    for line in answer["lines"]:
        for word in line["words"]:
            xs, ys = zip(*word["points"])
            boxes.setdefault(unicodedata.normalize("NFKC", word["text"]), []).append(
                (min(xs), min(ys), max(xs), max(ys)))
    words = pdftotext_words(pdf, tmp_path, "-f", str(page), "-l", str(page))
    scale = dpi / 72.0
    placed = [any(on_its_box((w["xMin"] * scale, w["yMin"] * scale, w["xMax"] * scale,
                              w["yMax"] * scale), box) for box in boxes.get(w["text"], ()))
              for w in words]
    return sum(placed) / len(placed)


def test_a_scanned_two_page_pdf_becomes_a_pdfa_with_the_services_text_on_its_ink(
        stack, tmp_path):
    pdf = pikepdf.new()
    for scan in SCANS:
        pdf.pages.extend(pikepdf.open(scan).pages)
    pdf.save(tmp_path / "in.pdf")

    done = ocrmypdf(stack, tmp_path, "in.pdf", "out.pdf", "--sidecar", "out.txt")
    assert done.returncode == 0, done.stderr[-3000:]
    out = (tmp_path / "out.pdf").read_bytes()
    with pikepdf.open(tmp_path / "out.pdf") as result:
        assert len(result.pages) == 2
        assert result.open_metadata().pdfa_status == "2B"
        assert "OCR gateway plugin" in str(result.docinfo.get("/Creator"))
    sidecar = (tmp_path / "out.txt").read_text().split("\f")
    images = sent_images(tmp_path)
    assert len(images) == 2
    for page, image in enumerate(images, start=1):
        answer = service_answer(stack, image)
        assert answer["image"]["angle"] == 0 and len(answer["text"]) > 4000
        # The sidecar is the service's text, character for character.
        assert sidecar[page - 1].strip("\n") == answer["text"]
        # The text layer holds the same characters in the same order (the order it was
        # written in: pdftotext -raw; its layout analysis reorders the two-column part)...
        assert squeezed(pdftotext(out, tmp_path, "-raw", "-f", str(page), "-l", str(page))) == \
            squeezed(answer["text"])
        # ... each word where the service found it (OCRmyPDF sends the scans at 300 dpi).
        assert words_on_their_boxes(out, page, answer, 300.0, tmp_path) >= 0.9


def test_a_page_turned_90_degrees_is_turned_upright_with_rotate_pages(stack, tmp_path):
    scan = pdfium.PdfDocument(SCANS[0])[0].render(scale=200 / 72).to_pil().convert("L")
    turned = scan.rotate(-90, expand=True)                     # 90 degrees clockwise
    (tmp_path / "in.pdf").write_bytes(images_pdf([turned], resolution=200))

    done = ocrmypdf(stack, tmp_path, "--rotate-pages", "in.pdf", "out.pdf")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "page is facing ⇨, confidence 15.00 - will rotate" in done.stderr
    with pikepdf.open(tmp_path / "out.pdf") as result:
        assert result.pages[0].obj.Rotate == 270             # shown turned back upright
    [image] = sent_images(tmp_path)
    answer = service_answer(stack, image)
    assert answer["image"]["angle"] == 0                     # the engine was sent it upright
    assert squeezed(pdftotext((tmp_path / "out.pdf").read_bytes(), tmp_path, "-raw")) == \
        squeezed(answer["text"])
    assert answer["text"].startswith("The LinnSequencer\n32 Track MIDI Sequence Recorder")


def test_the_sandwich_renderer_gets_a_text_only_page_from_the_same_answer(stack, tmp_path):
    page, _ = letter_page(seed=3)
    (tmp_path / "in.pdf").write_bytes(images_pdf([page], resolution=150))
    # A pipeline written for Tesseract runs unchanged: its options are taken, and ignored.
    done = ocrmypdf(stack, tmp_path, "--pdf-renderer", "sandwich", "--tesseract-timeout", "30",
                    "in.pdf", "out.pdf")
    assert done.returncode == 0, done.stderr[-3000:]
    [image] = sent_images(tmp_path)
    answer = service_answer(stack, image)
    out = (tmp_path / "out.pdf").read_bytes()
    assert squeezed(pdftotext(out, tmp_path, "-raw")) == squeezed(answer["text"])
    assert words_on_their_boxes(out, 1, answer, 150.0, tmp_path) >= 0.9


def test_a_wrong_key_url_or_engine_is_a_clear_ocrmypdf_error_before_any_page(stack, tmp_path):
    page, _ = letter_page(seed=1)
    (tmp_path / "in.pdf").write_bytes(images_pdf([page], resolution=150))

    wrong = ocrmypdf(stack, tmp_path, "in.pdf", "out.pdf", key="wrong.key")
    assert wrong.returncode == 1                              # OCRmyPDF's bad_args
    assert (f"The OCR gateway at {stack.url('')} refused the API key (--gateway-key or "
            f"$OCR_GATEWAY_KEY): 401 authentication_failed: Unknown or revoked API key."
            ) in wrong.stderr
    assert not (tmp_path / "out.pdf").exists()

    nowhere = ocrmypdf(stack, tmp_path, "in.pdf", "out.pdf", url="http://127.0.0.1:9")
    assert nowhere.returncode == 3                            # missing_dependency
    assert "The OCR gateway at http://127.0.0.1:9 could not be reached" in nowhere.stderr

    elsewhere = ocrmypdf(stack, tmp_path, "in.pdf", "out.pdf", url=stack.url("/not-here"))
    assert elsewhere.returncode == 3
    assert "the models list: the OCR gateway refused it: 404 " in elsewhere.stderr

    tesseract = ocrmypdf(stack, tmp_path, "--ocr-engine", "tesseract", "in.pdf", "out.pdf")
    assert tesseract.returncode == 1
    assert "run without --plugin ocrmypdf_ocr_gateway to use Tesseract" in tesseract.stderr

    unknown = ocrmypdf(stack, tmp_path, "-l", "xyz", "in.pdf", "out.pdf")
    assert unknown.returncode == 3
    assert "OCR engine does not have language data for the following requested languages: \nxyz" \
        in unknown.stderr


#: Pages of the --jobs test: the drawn letter, each page in fonts of its own.
JOB_PAGES = 4
#: The crowded stack's OCR_MAX_PIXELS: more than a letter page at 150 dpi (1100 pixels wide).
MAX_PIXELS = 3_000_000


@pytest.fixture(scope="module")
def crowded_stack(triton, tmp_path_factory):
    """A stack whose admission takes one of these pages at a time: its deadline four pages
    long (as measured here on Triton alone first: OCRmyPDF's own work slows the page it lets
    in), admission at 40 %, so a second page in flight would exceed it and is refused with 503
    overloaded and Retry-After; and images of at most :data:`MAX_PIXELS` pixels."""
    page, _ = letter_page(seed=10)
    data = encode(page)
    client = TritonClient(triton.grpc_url, timeout_s=180)
    client.infer(data, {"text_threshold": 0.69})                       # shapes met once
    started = time.perf_counter()
    client.infer(data, {"text_threshold": 0.68})
    page_s = max(time.perf_counter() - started, 0.5)
    client.close()
    with running_jobs_stack(triton, tmp_path_factory.mktemp("ocrmypdf-crowded"),
                            TRITON_TIMEOUT_S=str(round(4 * page_s, 2)),
                            OCR_ADMISSION_PERCENT="40",
                            OCR_MAX_PIXELS=str(MAX_PIXELS)) as running:
        response = running.request("POST", "/api/ocr", "a", body=data,     # the ledger's
                                   headers={"Content-Type": "image/png"})  # first measure
        assert response.status == 200
        yield running


def test_jobs_4_pages_at_once_wait_out_the_services_refusals_and_all_are_read(
        crowded_stack, tmp_path):
    pages = [letter_page(seed=20 + n)[0] for n in range(JOB_PAGES)]
    (tmp_path / "in.pdf").write_bytes(images_pdf(pages, resolution=150))
    first = crowded_stack.query("SELECT COALESCE(MAX(id), 0) FROM ocr_api_ocrrequest")[0][0]

    done = ocrmypdf(crowded_stack, tmp_path, "--jobs", "4", "in.pdf", "out.pdf",
                    "--sidecar", "out.txt")
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = crowded_stack.query("SELECT http_status, error_code FROM ocr_api_ocrrequest "
                                   "WHERE id > ?", first)
    assert outcomes.count((200, "")) == JOB_PAGES
    refused = [outcome for outcome in outcomes if outcome[0] != 200]
    assert refused and set(refused) == {(503, "overloaded")}
    assert "the OCR gateway said 503 overloaded; sending again in" in done.stderr
    sidecar = (tmp_path / "out.txt").read_text().split("\f")
    letter_words = set(LETTER.split())
    for page_text in sidecar:
        words = page_text.split()
        assert len(words) > 20 and sum(w in letter_words for w in words) / len(words) >= 0.9


def test_a_page_the_service_refuses_or_refusals_past_max_wait_fail_with_its_message(
        crowded_stack, tmp_path):
    page, _ = letter_page(seed=30)
    (tmp_path / "big.pdf").write_bytes(images_pdf([page.resize((2400, 2400))],
                                                  resolution=150))
    big = ocrmypdf(crowded_stack, tmp_path, "big.pdf", "out.pdf")
    assert big.returncode == 2                                # OCRmyPDF's input_file
    assert "000001_ocr.png: the OCR gateway refused it: 413 image_too_large: The image is " \
        f"2400x2400 pixels; the limit is {MAX_PIXELS} pixels." in big.stderr

    pages = [letter_page(seed=40 + n)[0] for n in range(JOB_PAGES)]
    (tmp_path / "in.pdf").write_bytes(images_pdf(pages, resolution=150))
    impatient = ocrmypdf(crowded_stack, tmp_path, "--jobs", "4", "--gateway-max-wait", "0",
                         "in.pdf", "out.pdf")
    assert impatient.returncode == 7                          # child_process_error
    assert re.search(r"_ocr\.png: the OCR gateway refused it again after 0 s of waiting and "
                     r"asked for \d+ s more, past --gateway-max-wait 0: 503 overloaded: ",
                     impatient.stderr), impatient.stderr[-2000:]
    assert not (tmp_path / "out.pdf").exists()
