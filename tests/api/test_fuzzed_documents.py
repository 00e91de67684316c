"""Damaged documents never answer 5xx: seeded mutations of the project's own PDFs and a
multi-page TIFF sent to ``POST /api/ocr`` (real embedded Triton; boxes only, at the smallest
working size, so a few hundred cases take well under a minute), and the damaged files that once
answered 500, kept as regression files (``tests/data/fuzz/``)."""

import io
import os

import pytest
from PIL import Image

from ocr_api.models import OcrRequest
from ocr_contract.errors import ERROR_CODES
from ocr_contract.limits import LONG_SIDE_MIN

from tests.fuzzing import mutations
from tests.helpers import DATA, blank_pdf

pytestmark = [pytest.mark.django_db, pytest.mark.triton]

FUZZ = DATA / "fuzz"
#: Mutations of each source per run, and their seed: fixed, so every run sends the same files.
#: ``make fuzz`` raises the count and draws a fresh seed (the seed is printed on failure).
CASES_PER_SOURCE = int(os.environ.get("OCR_FUZZ_CASES_PER_SOURCE") or 60)
SEED = int(os.environ.get("OCR_FUZZ_SEED") or 20261203)
QUERY = f"?recognize=false&orientation=upright&long_side={LONG_SIDE_MIN.default}"


def _three_page_tiff() -> bytes:
    frames = [Image.new("RGB", (160, 80), colour) for colour in ("white", "red", "blue")]
    buffer = io.BytesIO()
    frames[0].save(buffer, "TIFF", save_all=True, append_images=frames[1:],
                   compression="tiff_deflate")
    return buffer.getvalue()


def _sources() -> dict[str, bytes]:
    documents = DATA / "documents"
    return {"pypdfium2_text.pdf": (documents / "pypdfium2_text.pdf").read_bytes(),
            "ocrmypdf_linn.pdf": (documents / "ocrmypdf_linn.pdf").read_bytes(),
            "blank3.pdf": blank_pdf(3),
            "three.tiff": _three_page_tiff()}


def _post(client, data: bytes):
    return client.post(f"/api/ocr{QUERY}", data=data, content_type="application/octet-stream")


def test_mutated_documents_answer_200_or_a_4xx_with_its_code(live_triton, api_client):
    statuses: dict[int, int] = {}
    sent = 0
    for name, data in _sources().items():
        for case in mutations(name, data, SEED, CASES_PER_SOURCE):
            response = _post(api_client, case.data)
            sent += 1
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert response.status_code < 500, (case.name, response.json())  # name has the seed
            if response.status_code != 200:
                code = response.json()["error"]["code"]
                assert ERROR_CODES[code] == response.status_code, (case.name, code)
    print(f"seed {SEED}: {sent} damaged documents, answered {dict(sorted(statuses.items()))}")
    # Every request left its audit row, and the server still serves.
    assert OcrRequest.objects.count() == sent
    assert api_client.get("/api/ready").status_code == 200
    # The mutations exercise both outcomes (the seed is fixed: these counts do not move).
    assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0, statuses


@pytest.mark.parametrize("name, message", [
    # PDFium cannot load the page object (a damaged page dictionary): named by its number.
    ("pdfium_page_unloadable.pdf", "Page 2 of 2 of the PDF cannot be read"),
    # A number past qpdf's 64-bit integers (pybind raises ValueError).
    ("qpdf_number_overflow.pdf", "The PDF cannot be read"),
    # A /Count that disagrees with the page tree (qpdf's QpdfRuntimeError).
    ("qpdf_page_count_wrong.pdf", "The PDF cannot be read"),
])
def test_documents_that_once_answered_500(live_triton, api_client, name, message):
    response = _post(api_client, (FUZZ / name).read_bytes())
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "document_undecodable"
    assert error["message"].startswith(message), error
    row = OcrRequest.objects.get()
    assert (row.http_status, row.error_code) == (400, "document_undecodable")
