"""Uploads are opened in parser processes (ocr_api.intake.isolation): a file that crashes or
hangs the native parsers, or needs too much memory, costs its own request only (a 400 with its
code), and the next request opens as before. Real processes; the crash, the hang and the
allocation are this module's functions, run by the parser process through the same path as
:func:`ocr_api.intake.documents.parse_document` (a monkeypatch would not reach that process).
"""

import os
import resource
import signal
import threading
import time

import psutil
import pytest

from ocr_api import errors
from ocr_api.intake import documents, isolation
from ocr_contract.limits import PARSER_MEMORY_BYTES
from tests.helpers import DATA, IMAGES, blank_pdf

LINN = (DATA / "documents" / "ocrmypdf_linn.pdf").read_bytes()
JPEG = (IMAGES / "img_1.jpg").read_bytes()
LIMITS = {"max_pixels": 40_000_000, "min_side": 8}
TIMEOUT_MS = 5_000


# --- What a parser process runs (module-level: the process imports this module) ---------

def crash(data, max_pages, max_pixels, min_side):
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(data, max_pages, max_pixels, min_side):
    time.sleep(600)


def hog(data, max_pages, max_pixels, min_side):
    held = bytearray(2 * PARSER_MEMORY_BYTES.default)       # past any limit the tests set
    return ("document", "PDF", len(held), 0, 0, (), ())


#: A document :func:`crash_marked` crashes on (any other it opens as the gateway does).
CRASHING = b"CRASH" + LINN


def crash_marked(data, max_pages, max_pixels, min_side):
    if data.startswith(b"CRASH"):
        os.kill(os.getpid(), signal.SIGSEGV)
    return documents.parse_document(data, max_pages, max_pixels, min_side)


def own_state():
    """What the parser process is: its pid, address-space limit and name."""
    import multiprocessing

    return (os.getpid(), resource.getrlimit(resource.RLIMIT_AS)[0],
            multiprocessing.current_process().name)


def digests(*blobs):
    import hashlib

    return tuple(hashlib.sha256(blob).hexdigest() for blob in blobs)


def buggy(data, max_pages, max_pixels, min_side):
    return 1 / 0


def an_object():
    return threading.Lock      # a class: pickled by reference, refused by the parent


# --- Fixtures -----------------------------------------------------------------------------

@pytest.fixture
def pool():
    """Two parser processes with the default memory limit, ended after the test."""
    pool = isolation.ParserPool(2, PARSER_MEMORY_BYTES.default)
    yield pool
    pool.close()


def open_in(pool, data=LINN, parse=None, timeout_ms=TIMEOUT_MS):
    return documents.open_isolated(pool, data, 10, timeout_ms=timeout_ms, parse=parse, **LIMITS)


def assert_opens(pool):
    document = open_in(pool)
    assert (document.format, document.page_count, len(document.pages)) == ("PDF", 1, 1)
    assert document.data is LINN


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# --- Tests --------------------------------------------------------------------------------

def test_a_document_opens_in_a_parser_process_as_it_does_in_process(pool):
    for data in (LINN, JPEG):
        isolated, local = open_in(pool, data), documents.open_in_process(data, 10, **LIMITS)
        assert isolated == local
    with pytest.raises(errors.DocumentUndecodable) as refused:
        open_in(pool, b"%PDF-1.4\n%%EOF\n")
    assert str(refused.value.detail).startswith("The PDF cannot be read")
    with pytest.raises(errors.TooManyPages):
        documents.open_isolated(pool, LINN, 0, timeout_ms=TIMEOUT_MS, **LIMITS)


def test_a_parser_process_has_its_memory_limit(pool):
    pid, address_space, name = pool.call(own_state, (), 10)
    assert pid != os.getpid() and name == "ocr-parser"
    assert address_space == PARSER_MEMORY_BYTES.default
    # Under that limit PDFium, qpdf and Pillow are imported and run (the PDF and the JPEG).
    assert_opens(pool)
    open_in(pool, JPEG)


def test_the_parsers_import_and_run_under_the_memory_limit():
    """A spawned parser process imports PDFium, qpdf and Pillow after its limit is set (the
    fork server imports them before)."""
    spawned = isolation.ParserPool(1, PARSER_MEMORY_BYTES.default, context="spawn")
    try:
        assert_opens(spawned)
        assert open_in(spawned, JPEG).format == "JPEG"
    finally:
        spawned.close()


def test_the_settings_reach_the_parser_process_as_arguments(settings):
    """The parser process reads no setting: a test's override (or a deployment's) is passed."""
    settings.OCR_MIN_IMAGE_SIDE = 10_000
    with pytest.raises(errors.ImageTooSmall, match="at least 10000"):
        documents.open_document(JPEG, 10)
    settings.OCR_MIN_IMAGE_SIDE = 8
    settings.OCR_MAX_PIXELS = 1000
    with pytest.raises(errors.ImageTooLarge, match="the limit is 1000 pixels"):
        documents.open_document(JPEG, 10)


def test_a_crash_costs_only_its_request(pool, caplog):
    pool.warm_up()
    before = set(pool.pids())
    with pytest.raises(errors.DocumentUndecodable) as refused:
        open_in(pool, parse=crash)
    assert "crashed the document parser" in str(refused.value.detail)
    assert refused.value.status_code == 400
    crashed = before - set(pool.pids())
    assert len(crashed) == 1 and gone(crashed.pop())
    assert "died (signal SIGSEGV)" in caplog.text
    assert_opens(pool)                                   # the next request: a fresh process


def test_a_hang_is_killed_at_the_timeout(pool):
    pool.warm_up()
    before = set(pool.pids())
    started = time.monotonic()
    with pytest.raises(errors.DocumentTooComplex) as refused:
        open_in(pool, parse=hang, timeout_ms=500)
    elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 0.5 + 3.0, elapsed
    assert "took too long to open (more than 500 ms)" in str(refused.value.detail)
    stuck = before - set(pool.pids())
    assert len(stuck) == 1 and gone(stuck.pop())
    assert_opens(pool)


def test_memory_past_the_limit_is_refused_with_a_code():
    small = isolation.ParserPool(1, 512 * 1024 * 1024)
    try:
        with pytest.raises(errors.DocumentTooComplex) as refused:
            open_in(small, parse=hog)
        assert "more memory" in str(refused.value.detail)
        assert_opens(small)
    finally:
        small.close()


def test_other_requests_carry_on_while_one_crashes_or_hangs(pool):
    """Calls in flight on the other process are not touched by one process's crash or kill."""
    results = {}

    def run(name, **kwargs):
        try:
            results[name] = open_in(pool, **kwargs).page_count
        except errors.ApiError as exc:
            results[name] = exc.default_code

    hung = threading.Thread(target=run, args=("hang",),
                            kwargs={"parse": hang, "timeout_ms": 1500})
    hung.start()
    time.sleep(0.2)                        # the hang holds one process; the other serves
    for index in range(5):
        run(f"good {index}")
    run("crash", parse=crash)
    run("after crash")
    hung.join()
    assert results == {"hang": "document_too_complex", "crash": "document_undecodable",
                       "after crash": 1, **{f"good {index}": 1 for index in range(5)}}


def test_concurrent_crashes_refuse_only_the_crashing_documents(pool):
    results = [None] * 12
    docs = [CRASHING if index % 3 == 0 else LINN for index in range(12)]

    def run(index):
        try:
            results[index] = open_in(pool, docs[index], parse=crash_marked).page_count
        except errors.DocumentUndecodable:
            results[index] = "crashed"

    threads = [threading.Thread(target=run, args=(index,)) for index in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["crashed" if index % 3 == 0 else 1 for index in range(12)]


def test_large_uploads_arrive_whole_through_the_shared_buffer(pool):
    """Bytes from SHARE_MIN_BYTES up go through a buffer that grows, and gives back its pages
    past SHARE_KEEP_BYTES after each call; every call still gets its own bytes."""
    import hashlib

    sizes = [isolation.SHARE_MIN_BYTES - 1, isolation.SHARE_MIN_BYTES, 3 << 20,
             isolation.SHARE_KEEP_BYTES + (5 << 20), 1 << 20, 7 << 20]
    for size in sizes:
        first, second = os.urandom(size), os.urandom(size // 2 + 1)
        assert pool.call(digests, (first, b"small", second), 30) == tuple(
            hashlib.sha256(blob).hexdigest() for blob in (first, b"small", second))
    padded = JPEG + bytes((20 << 20) - len(JPEG))      # the upload limit: header read only
    document = open_in(pool, padded)
    assert (document.format, document.width, document.data) == ("JPEG", 1280, padded)


def test_only_plain_data_comes_back_from_a_parser_process(pool):
    with pytest.raises(isolation.ParserFailed, match="may not send"):
        pool.call(an_object, (), 10)
    assert_opens(pool)


def test_a_bug_in_the_parser_is_an_error_not_a_refusal(pool):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        open_in(pool, parse=buggy)
    assert_opens(pool)


def test_a_process_killed_while_idle_is_replaced_without_refusing(pool):
    pool.warm_up()
    for pid in pool.pids():
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert_opens(pool)


def test_the_shared_pool_is_made_once_per_process_and_settings():
    first = isolation.shared_pool(2, PARSER_MEMORY_BYTES.default)
    assert isolation.shared_pool(2, PARSER_MEMORY_BYTES.default) is first
    assert first.pid == os.getpid()
    other = isolation.shared_pool(1, PARSER_MEMORY_BYTES.default)
    assert other is not first
    other.close()


def test_fork_is_refused():
    with pytest.raises(ValueError):
        isolation.ParserPool(1, 0, context="fork")


@pytest.mark.django_db
def test_through_the_api_a_slow_open_is_a_400_and_the_next_request_opens(api_client, settings,
                                                                        monkeypatch):
    from ocr_api import admission
    from ocr_api.admission.ledger import LocalLedger
    from ocr_api.models import OcrRequest

    # A 3000-page PDF takes ~0.3 s to count and split (two slow cores): far more than 10 ms.
    # The page limit lets it through: 3000 pages, each measured at a millisecond (this
    # process's own ledger, fresh; the limit follows what a page costs, ocr_api.admission).
    settings.OCR_MAX_PAGES, settings.OCR_BROKER_URL = 3000, ""
    monkeypatch.setitem(admission._ledgers, "", LocalLedger())
    admission.get().ledger.observe(admission.DOCUMENT, 0.001)
    settings.OCR_PARSER_TIMEOUT_MS = 10
    response = api_client.post("/api/ocr", data=blank_pdf(3000), content_type="application/pdf")
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["code"] == "document_too_complex"
    row = OcrRequest.objects.get()
    assert (row.http_status, row.error_code) == (400, "document_too_complex")
    settings.OCR_PARSER_TIMEOUT_MS = TIMEOUT_MS
    response = api_client.post("/api/ocr", data=b"%PDF-1.4\n%%EOF\n",
                               content_type="application/pdf")
    assert response.json()["error"]["code"] == "document_undecodable"


@pytest.mark.django_db
@pytest.mark.triton
def test_through_the_api_a_pdf_still_opens_and_is_read(live_triton, api_client):
    response = api_client.post("/api/ocr?recognize=false", data=LINN,
                               content_type="application/pdf")
    assert response.status_code == 200, response.json()
    assert len(response.json()["pages"]) == 1
