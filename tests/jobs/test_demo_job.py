"""The demo page sends a document over the synchronous page limit as a job: a progress bar
while it is read, then its pages like a document read at once, and downloads from its result.
Real Chromium against the jobs' stack (redis-server, a worker process, gunicorn, Triton)."""

from __future__ import annotations

import pytest

from tests.api.test_browser import DESKTOP, browser  # noqa: F401 - a fixture

from .test_jobs import document

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.browser]

#: OCR_MAX_PAGES of the jobs' stack (the default) + 1.
PAGES = 5


def test_a_long_document_goes_as_a_job_with_a_progress_bar(jobs_stack, browser, tmp_path):
    path = tmp_path / "long.pdf"
    path.write_bytes(document(PAGES))
    context = browser.new_context(viewport=DESKTOP, base_url=jobs_stack.url(""),
                                  accept_downloads=True)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto("/")
        page.fill("#api-key", jobs_stack.keys["a"])
        seen: list[tuple[str, str]] = []
        page.on("response", lambda r: seen.append((r.request.method, r.url.split("?")[0]
                                                   .rsplit("/api/", 1)[-1])))
        with page.expect_response(lambda r: r.url.endswith("/api/jobs")) as created:
            page.set_input_files("#image-input", str(path))
        job = created.value.json()
        assert created.value.status == 202 and job["progress"]["total"] == PAGES

        # The bar follows the job, then the pages are drawn like a document's.
        page.wait_for_selector("#job-row:not([hidden])")
        assert page.get_attribute("#job-row", "data-job-id") == job["id"]
        assert page.eval_on_selector("#job-progress", "e => e.max") == PAGES
        page.wait_for_selector('#job-row[data-status="succeeded"]', timeout=240_000)
        page.wait_for_selector(f'#pages figure[data-page="{PAGES}"]', timeout=30_000)
        assert page.eval_on_selector("#job-progress", "e => e.value") == PAGES
        result = jobs_stack.request("GET", f"/api/jobs/{job['id']}/result").json()
        boxes = sum(len(p["boxes"]) for p in result["pages"])
        assert page.inner_text("#summary").startswith(
            f"PDF · {PAGES} pages · {boxes} boxes · read as job {job['id']} in ")
        assert page.input_value("#full-text") == result["text"]
        assert "alpha" in result["text"] and "page 5" in result["text"]
        assert page.is_disabled("#cancel-job")
        assert ("POST", "ocr") in seen and ("POST", "jobs") in seen
        assert ("GET", f"jobs/{job['id']}/result") in seen

        # Downloads come from the job's result, not from a new upload.
        with page.expect_response(lambda r: "/result" in r.url) as fetched, \
                page.expect_download() as download:
            page.click('.downloads button[data-format="text"]')
        assert (fetched.value.status, fetched.value.request.method) == (200, "GET")
        assert fetched.value.url.endswith(f"/api/jobs/{job['id']}/result?format=text")
        assert download.value.suggested_filename == "long.txt"
        with open(download.value.path(), encoding="utf-8") as file:
            assert file.read() == result["text"] + "\n"
    finally:
        context.close()
    assert errors == []
