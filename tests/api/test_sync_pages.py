"""The synchronous path finishes what it accepts (issue 32): a document's pages go to a real
embedded Triton in order, no more at a time than TRITON_CONCURRENT_PAGES, each page's
TRITON_TIMEOUT_S deadline from when it is sent, none sent after one failed; a document over
OCR_MAX_PAGES is refused at once (413 ``too_many_pages``) and pointed to ``POST /api/jobs``.

Triton is never mocked: the real client's ``infer`` is wrapped to watch what is in flight.
Cheap settings (``long_side=64``, ``recognize=false``) wherever time is not the point."""

import io
import math
import threading
import time

import pikepdf
import pytest
from PIL import Image, ImageDraw

from ocr_api import admission
from ocr_api.admission.ledger import LocalLedger
from ocr_api.intake import documents
from ocr_api.models import OcrRequest
from ocr_contract.tensors import PAGE
from ocr_inference.client import TritonClient
from tests.helpers import DATA, IMAGES, blank_pdf
from tests.image_factory import images_pdf

pytestmark = [pytest.mark.django_db, pytest.mark.triton]
LINN = (DATA / "documents" / "ocrmypdf_linn.pdf").read_bytes()
CHEAP = "?long_side=64&recognize=false"
JOBS_LINK = '</api/jobs>; rel="alternate"'


class Watch:
    """What the real client's ``infer`` was asked, and how many calls were in flight at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.calls: list[tuple[bytes, int, float, float]] = []   # image, PAGE, sent, answered

    def wrap(self, infer):
        def watched(client, image, parameters, timeout_s=None):
            with self.lock:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
            sent = time.monotonic()
            try:
                return infer(client, image, parameters, timeout_s)
            finally:
                with self.lock:
                    self.in_flight -= 1
                    self.calls.append((image, parameters.get(PAGE.name, 0), sent,
                                       time.monotonic()))
        return watched

    def pages_sent(self, document: bytes) -> list[int]:
        """The pages (1-based) of ``document`` sent, in the order they were sent."""
        pages = documents.open_in_process(document, 100, 40_000_000, 8).pages
        ordered = sorted(self.calls, key=lambda call: call[2])
        if pages:
            return [pages.index(image) + 1 for image, _, _, _ in ordered]
        return [page + 1 for _, page, _, _ in ordered]


@pytest.fixture
def watch(monkeypatch):
    watch = Watch()
    monkeypatch.setattr(TritonClient, "infer", watch.wrap(TritonClient.infer))
    return watch


def text_pdf(pages: int, tag: str = "") -> bytes:
    """A PDF of ``pages`` small pages of a few words each, every page different."""
    images = []
    for number in range(pages):
        image = Image.new("RGB", (320, 200), "white")
        ImageDraw.Draw(image).text((20, 80), f"page {number + 1} {tag}", fill="black")
        images.append(image)
    return images_pdf(images)


def linn_pages(count: int, first: int = 0) -> bytes:
    """OCRmyPDF's dense page ``count`` times, each copy cropped by another point so that no
    two are the same bytes (Triton's response cache answers nothing here)."""
    source = pikepdf.open(io.BytesIO(LINN))
    out = pikepdf.new()
    for number in range(first, first + count):
        out.pages.append(source.pages[0])
        x0, y0, x1, y1 = (float(v) for v in source.pages[0].MediaBox)
        out.pages[-1].MediaBox = pikepdf.Array([x0, y0, x1 - 1 - number, y1 - 1 - number])
    buffer = io.BytesIO()
    out.save(buffer)
    return buffer.getvalue()


def broken_tiff(pages: int, broken: int) -> bytes:
    """A TIFF of ``pages`` frames whose frame ``broken`` (0-based) has a readable header but
    data that cannot be decoded: the gateway counts it, Triton fails it."""
    frames = []
    for number in range(pages):
        frame = Image.new("RGB", (96, 96), "white")
        ImageDraw.Draw(frame).text((10, 40), f"p{number}", fill="black")
        frames.append(frame)
    out = io.BytesIO()
    frames[0].save(out, "TIFF", save_all=True, append_images=frames[1:],
                   compression="tiff_adobe_deflate")
    data = bytearray(out.getvalue())
    with Image.open(io.BytesIO(bytes(data))) as image:
        image.seek(broken)
        offsets, counts = image.tag_v2[273], image.tag_v2[279]
    for offset, count in zip(*(v if isinstance(v, tuple) else (v,) for v in (offsets, counts))):
        data[offset:offset + count] = b"\x13" * count
    return bytes(data)


# -- pages to Triton ----------------------------------------------------------------------

@pytest.mark.parametrize("concurrent", [1, 2])
def test_a_documents_pages_go_in_order_no_more_than_k_at_a_time(api_client, live_triton,
                                                                 settings, watch, concurrent):
    settings.TRITON_CONCURRENT_PAGES = concurrent
    document = text_pdf(4, f"k{concurrent}")
    response = api_client.post(f"/api/ocr{CHEAP}", document, content_type="application/pdf")
    assert response.status_code == 200, response.json()
    assert len(response.json()["pages"]) == 4
    assert watch.most_in_flight == concurrent
    assert watch.pages_sent(document) == [1, 2, 3, 4]


def test_a_batchs_pages_go_no_more_than_k_at_a_time(api_client, live_triton, settings, watch):
    settings.TRITON_CONCURRENT_PAGES = 2
    response = api_client.post(f"/api/ocr/batch{CHEAP}", {"images": [
        io.BytesIO(text_pdf(3, "batch")), io.BytesIO((IMAGES / "korean.png").read_bytes()),
        io.BytesIO(text_pdf(2, "batch two"))]}, format="multipart")
    assert [item["status"] for item in response.json()["results"]] == [200, 200, 200]
    assert len(watch.calls) == 6 and watch.most_in_flight == 2


def test_no_page_is_sent_after_one_failed(api_client, live_triton, settings, watch):
    settings.TRITON_CONCURRENT_PAGES = 1
    document = broken_tiff(4, broken=1)
    response = api_client.post(f"/api/ocr{CHEAP}", document, content_type="image/tiff")
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["message"].startswith("Page 2 of 4: ")
    assert watch.pages_sent(document) == [1, 2]


def test_in_a_batch_a_failed_page_stops_its_own_document_only(api_client, live_triton,
                                                              settings, watch):
    settings.TRITON_CONCURRENT_PAGES = 1
    broken = broken_tiff(4, broken=0)
    response = api_client.post(f"/api/ocr/batch{CHEAP}", {"images": [
        io.BytesIO(broken), io.BytesIO(text_pdf(2, "after a broken one"))]}, format="multipart")
    first, second = response.json()["results"]
    assert (first["status"], second["status"]) == (400, 200)
    assert first["error"]["message"].startswith("Page 1 of 4: ")
    assert len(watch.calls) == 1 + 2


def test_a_pages_deadline_starts_when_it_is_sent(api_client, live_triton, settings, watch):
    """Pages that together take twice TRITON_TIMEOUT_S are answered, each page alone well
    under it (before, every page was sent at once with its deadline running, and the last ones
    timed out waiting behind the first). Timed on this machine first, so the premise holds
    however fast it is; then checked."""
    settings.TRITON_CONCURRENT_PAGES = 1
    query = "?long_side=64&recognize=false"
    calibration = api_client.post(f"/api/ocr{query}", linn_pages(3, first=100),
                                  content_type="application/pdf")
    assert calibration.status_code == 200, calibration.json()
    times = [answered - sent for _, _, sent, answered in watch.calls]
    # The deadline: three times the slowest page, and at least 2 s (a loaded machine pauses);
    # the pages: together twice the deadline at the fastest page's pace.
    settings.TRITON_TIMEOUT_S = timeout_s = max(3 * max(times), 2.0)
    settings.OCR_MAX_PAGES = pages = min(60, math.ceil(2 * timeout_s / min(times)))
    watch.calls.clear()
    response = api_client.post(f"/api/ocr{query}", linn_pages(pages),
                               content_type="application/pdf")
    assert response.status_code == 200, (response.json(), times, timeout_s, pages)
    assert len(response.json()["pages"]) == pages
    times = [answered - sent for _, _, sent, answered in watch.calls]
    assert sum(times) > timeout_s > max(times), (times, timeout_s)


# -- the page limit -------------------------------------------------------------------------

def test_a_document_over_the_limit_is_refused_at_once_and_sent_to_jobs(api_client, live_triton,
                                                                       settings, watch):
    settings.OCR_MAX_PAGES = 4
    started = time.monotonic()
    response = api_client.post("/api/ocr", blank_pdf(5), content_type="application/pdf")
    elapsed = time.monotonic() - started
    assert (response.status_code, response.json()["error"]["code"]) == (413, "too_many_pages")
    message = response.json()["error"]["message"]
    assert message.startswith("The document has 5 pages; this endpoint reads at most 4.")
    assert "POST /api/jobs" in message and "OCR_JOB_MAX_PAGES" in message
    assert response["Link"] == JOBS_LINK
    assert watch.calls == [] and elapsed < 5.0


def test_the_limit_follows_what_a_page_costs_here(api_client, live_triton, settings, watch,
                                                  monkeypatch):
    """Where a document's page is measured at 25 s (this process's own ledger, fresh), 3 pages
    would outlast the proxy (it waits 2 x 30 + 30 s, 30 of which may go waiting for a thread):
    refused at once, told how many pages fit here and why."""
    settings.OCR_MAX_PAGES, settings.TRITON_TIMEOUT_S, settings.OCR_BROKER_URL = 4, 30.0, ""
    monkeypatch.setitem(admission._ledgers, "", LocalLedger())
    admission.get().ledger.observe(admission.DOCUMENT, 25.0)
    response = api_client.post("/api/ocr", blank_pdf(3), content_type="application/pdf")
    assert (response.status_code, response.json()["error"]["code"]) == (413, "too_many_pages")
    message = response.json()["error"]["message"]
    assert message.startswith("The document has 3 pages; this endpoint reads at most 1.")
    assert "in parts of up to 1 page (OCR_MAX_PAGES is 4, fewer while a page takes this " \
        "server 25 s)" in message
    assert response["Link"] == JOBS_LINK and watch.calls == []
    one = api_client.post(f"/api/ocr{CHEAP}", blank_pdf(1), content_type="application/pdf")
    assert one.status_code == 200


def test_a_batch_item_over_the_limit_is_sent_to_jobs(api_client, live_triton, settings, watch):
    settings.OCR_MAX_PAGES = 2
    response = api_client.post(f"/api/ocr/batch{CHEAP}", {"images": [
        io.BytesIO(blank_pdf(3)), io.BytesIO((IMAGES / "korean.png").read_bytes())]},
        format="multipart")
    assert response.status_code == 200
    first, second = response.json()["results"]
    assert (first["status"], first["error"]["code"], second["status"]) == (
        413, "too_many_pages", 200)
    assert "POST /api/jobs" in first["error"]["message"]
    assert response["Link"] == JOBS_LINK
    assert len(watch.calls) == 1                # the image only


def test_a_batch_without_such_an_item_has_no_link(api_client, live_triton):
    response = api_client.post(f"/api/ocr/batch{CHEAP}", {"images": [
        io.BytesIO((IMAGES / "korean.png").read_bytes())]}, format="multipart")
    assert response.status_code == 200 and not response.has_header("Link")


def test_a_job_over_its_own_limit_is_not_sent_to_jobs(api_client, settings):
    settings.OCR_JOB_MAX_PAGES = 2
    response = api_client.post("/api/jobs", blank_pdf(3), content_type="application/pdf")
    assert (response.status_code, response.json()["error"]["code"]) == (413, "too_many_pages")
    message = response.json()["error"]["message"]
    assert message == "The document has 3 pages; this endpoint reads at most 2."
    assert not response.has_header("Link")


def test_a_page_too_slow_at_the_size_asked_is_refused_at_once_and_sent_to_jobs(
        api_client, live_triton, settings, watch, monkeypatch):
    """Where a photo is measured at 7 s (a 2-core AVX2 server's CRAFT; this process's own
    ledger, fresh), ``long_side=2560`` is 4 times its pixels, 28 s: more than the 24 s a
    request may take at a 30-s deadline, refused before anything is sent; 1600 (11 s) is
    read."""
    settings.TRITON_TIMEOUT_S, settings.OCR_BROKER_URL = 30.0, ""
    monkeypatch.setitem(admission._ledgers, "", LocalLedger())
    admission.get().ledger.observe(admission.IMAGE, 7.0)
    photo = (IMAGES / "english.png").read_bytes()
    started = time.monotonic()
    response = api_client.post("/api/ocr?long_side=2560", photo, content_type="image/png")
    elapsed = time.monotonic() - started
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["field"]) == (
        413, "page_too_slow", "long_side")
    assert "about 28 s" in error["message"] and "POST /api/jobs" in error["message"]
    assert response["Link"] == JOBS_LINK and not response.has_header("Retry-After")
    assert watch.calls == [] and elapsed < 5.0
    row = OcrRequest.objects.get(request_id=response.json()["request_id"])
    assert (row.http_status, row.error_code) == (413, "page_too_slow")
    read = api_client.post("/api/ocr?long_side=1600&recognize=false", photo,
                           content_type="image/png")
    assert read.status_code == 200 and len(watch.calls) == 1
