"""Uploads to ``POST /api/jobs`` larger than ``/api/ocr`` takes: a raw body and a multipart
file over Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (which is ``/api/ocr``'s limit) are jobs,
and one over ``OCR_JOB_MAX_BYTES`` is refused. No broker here: a job's pages are sent when
its transaction commits, which a test's transaction never does."""

from __future__ import annotations

import io

import pikepdf
import pytest
from django.conf import settings

from ocr_jobs.models import Job


def big_pdf(size: int) -> bytes:
    """A 2-page PDF of at least ``size`` bytes: an uncompressed grey image on page 1."""
    pdf = pikepdf.new()
    side = int(size ** 0.5) + 1
    image = pikepdf.Stream(pdf, bytes(side * side))
    image.Type, image.Subtype = pikepdf.Name.XObject, pikepdf.Name.Image
    image.Width, image.Height = side, side
    image.ColorSpace, image.BitsPerComponent = pikepdf.Name.DeviceGray, 8
    for _ in range(2):
        pdf.add_blank_page(page_size=(612, 792))
    pdf.pages[0].Resources = pikepdf.Dictionary(XObject=pikepdf.Dictionary(Im0=image))
    pdf.pages[0].Contents = pikepdf.Stream(pdf, b"q 612 0 0 792 0 0 cm /Im0 Do Q")
    out = io.BytesIO()
    pdf.save(out, compress_streams=False)
    return out.getvalue()


@pytest.fixture
def job_var(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.mark.parametrize("how", ["raw", "multipart"])
def test_a_job_takes_a_document_larger_than_api_ocr_does(api_client, job_var, how):
    data = big_pdf(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 5 * 1024 * 1024)
    assert len(data) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if how == "raw":
        response = api_client.post("/api/jobs", data, content_type="application/pdf")
    else:
        response = api_client.post("/api/jobs", {"image": io.BytesIO(data)},
                                   format="multipart")
    assert response.status_code == 202, response.json()
    job = Job.objects.get(id=response.json()["id"])
    assert (job.page_count, job.bytes_received) == (2, len(data))
    assert job.upload_path.read_bytes() == data


def test_a_job_over_its_byte_limit_is_refused(api_client, job_var, settings):
    settings.OCR_JOB_MAX_BYTES = 1024 * 1024
    response = api_client.post("/api/jobs", big_pdf(2 * 1024 * 1024),
                               content_type="application/pdf")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert Job.objects.count() == 0


def succeeded_job(api_key, pages: int = 3) -> Job:
    """A succeeded job made in the database (no broker): ``pages`` stored page answers."""
    import datetime as dt

    from django.utils import timezone

    from ocr_jobs.models import JobPage

    job = Job.objects.create(api_key=api_key, request_id="r", format="PDF", page_count=pages,
                             pages_done=pages, status=Job.SUCCEEDED,
                             page_points=[[612, 792]] * pages,
                             expires_at=timezone.now() + dt.timedelta(days=1))
    for number in range(1, pages + 1):
        JobPage.objects.create(job=job, api_key=api_key, number=number, status=JobPage.DONE,
                               body={"page": number, "model": {"name": "m", "version": "1"},
                                     "width": 10, "height": 10, "angle": 0, "text": "x",
                                     "boxes": [], "lines": [], "paragraphs": []})
    return job


def test_pages_are_ascii_digits_only(api_client, api_key, job_var):
    job = succeeded_job(api_key[0])
    response = api_client.get(f"/api/jobs/{job.id}/result?pages=\u0662")     # Arabic-Indic 2
    assert (response.status_code, response.json()["error"]["field"]) == (400, "pages")
    assert api_client.get(f"/api/jobs/{job.id}/result?pages=2").json()["pages_range"] == [2, 2]


def test_a_lost_upload_is_a_404_for_the_pdf_only(api_client, api_key, job_var):
    job = succeeded_job(api_key[0])
    response = api_client.get(f"/api/jobs/{job.id}/result?format=pdf")
    assert response.status_code == 404
    assert response.json()["error"]["message"].startswith(
        "The job's document is no longer stored")
    assert api_client.get(f"/api/jobs/{job.id}/result?format=text").status_code == 200
