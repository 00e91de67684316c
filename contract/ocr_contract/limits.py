"""Limits on uploads and parameters: each is a setting with one environment variable and one
default.

The gateway's settings and Triton's ``preprocess`` both read a limit with :meth:`Limit.read`,
so a deployment that raises ``OCR_MAX_PIXELS`` (say) raises it on both sides with one
variable. ``deploy/.env.example`` lists them (tested).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from .settings import read_int


@dataclass(frozen=True)
class Limit:
    """One integer limit.

    Attributes:
        setting: the environment variable, also the Django setting's name.
        default: the value when the variable is unset or empty.
        unit: what the number counts ("bytes", "pixels", "images").
        description: one line for documentation.
    """

    setting: str
    default: int
    unit: str
    description: str

    def read(self, environ: Mapping[str, str] = os.environ) -> int:
        """The configured value: ``environ[setting]`` as an int, or :attr:`default`.

        Raises:
            ValueError: the variable is set to something that is not an integer.
        """
        return read_int(self.setting, self.default, environ)


MAX_UPLOAD_BYTES = Limit("OCR_MAX_UPLOAD_BYTES", 20 * 1024 * 1024, "bytes",
                         "largest image file accepted by POST /api/ocr")
BATCH_MAX_IMAGES = Limit("OCR_BATCH_MAX_IMAGES", 8, "images",
                         "most images in one POST /api/ocr/batch")
BATCH_MAX_UPLOAD_BYTES = Limit("OCR_BATCH_MAX_UPLOAD_BYTES", 40 * 1024 * 1024, "bytes",
                               "most bytes of all images of one batch together")
#: A decompression-bomb guard: the header's width x height, before any pixel is decoded.
MAX_PIXELS = Limit("OCR_MAX_PIXELS", 40_000_000, "pixels",
                   "most pixels (width x height) of an image")
MIN_IMAGE_SIDE = Limit("OCR_MIN_IMAGE_SIDE", 8, "pixels",
                       "shortest width or height of an image")
#: Below 64 pixels CRAFT sees nothing useful; above 2560 one request needs several GB of
#: activations.
LONG_SIDE_MIN = Limit("OCR_LONG_SIDE_MIN", 64, "pixels", "smallest long_side a request may ask")
LONG_SIDE_MAX = Limit("OCR_LONG_SIDE_MAX", 2560, "pixels", "largest long_side a request may ask")

#: Pages of a PDF or multi-page TIFF read in one request, counted from the document's
#: structure before anything is rendered; a longer one is refused at once (413
#: too_many_pages, pointing to POST /api/jobs), never answered 504 after a minute of work.
#: Sized so the proxy's deadline holds on the machine the defaults are for (the cpu flavour on
#: 2 cores): the proxy waits 2 x TRITON_TIMEOUT_S + 30 = 90 s for an answer
#: (ocr_proxy.config.proxy_read_timeout_s), of which a request may spend TRITON_TIMEOUT_S
#: (30 s) waiting for a gunicorn thread, leaving 60 s for its pages. The densest test page
#: (tests/data/documents/ocrmypdf_linn.pdf) reads in ~8.8 s alone there (10-14 s on a fresh
#: Triton, whose engines meet the page's shapes for the first time), one page at a time
#: (TRITON_CONCURRENT_PAGES): with 1.5x headroom 60 s / (1.5 x 8.8 s) = 4.5 -> 4 pages,
#: measured 41-55 s for 4 such pages (first request included). Operators size it the same
#: way: time their densest expected page alone (timing_ms.inference) on the deployment, t;
#: then OCR_MAX_PAGES = (TRITON_TIMEOUT_S + 30) / (1.5 x t), rounded down (a GPU reading a page
#: in ~0.5 s: 80; a slower CPU: fewer).
MAX_PAGES = Limit("OCR_MAX_PAGES", 4, "pages",
                  "most pages of a document POST /api/ocr reads (longer: POST /api/jobs); size "
                  "it as (TRITON_TIMEOUT_S + 30) / (1.5 x seconds of the densest page alone); "
                  "the gateway reads fewer while its measured pages take longer")
#: Pages (or batch images) of one request sent to Triton at once: as many as Triton runs at
#: once. Each page's TRITON_TIMEOUT_S deadline starts when it is sent, so it never runs while
#: the page waits behind its own request's other pages. The cpu flavour runs one network at a
#: time (craft, refinenet and the recognizer share the rate limiter's one "ocr_engine" unit),
#: so a second page in flight only overlaps its decoding with the first's networks, and waits
#: behind them with its deadline running. Measured on a fresh `make serve` stack (4 x linn,
#: and OCRmyPDF's cardinal page turned 0/90/180/270; AMD EPYC, 2 cores, idle): 1 in flight
#: 200 in 54.6, 53.1 and 40.8 s for three documents in a row; 2 in flight 504 for the first
#: two (a page past 30 s while its engines met new shapes) and 200 in 44.7 s for the third.
#: Two in flight save ~10 % on a warm machine and cost a 504 on a fresh or busy one: 1 for the
#: cpu flavour. A GPU deployment with dynamic batching sets it to craft's max_batch_size (4).
CONCURRENT_PAGES = Limit("TRITON_CONCURRENT_PAGES", 1, "pages",
                         "pages of one request sent to Triton at once (as many as it runs at "
                         "once: cpu flavour 1, gpu 4)")
#: Admission (ocr_api.admission): a synchronous request is sent to Triton only when the work
#: already in flight there and its own first page are expected to take at most this share of
#: its TRITON_TIMEOUT_S deadline; otherwise it is refused at once (503 overloaded, with
#: Retry-After). The remaining 20 % is the margin of an estimate made from the average page:
#: a dense scan takes 4x a photo. 0 turns admission off (every request is sent and may time
#: out, as before it existed).
ADMISSION_PERCENT = Limit("OCR_ADMISSION_PERCENT", 80, "percent",
                          "share of TRITON_TIMEOUT_S the expected wait and reading of a request "
                          "may take before it is refused at once with 503 overloaded (0: off)")
#: Resolution PDF pages are rendered at (a 10 pt line is then ~28 pixels high before the
#: detector's resize); lowered for a page that would exceed OCR_MAX_PIXELS.
PDF_DPI = Limit("OCR_PDF_DPI", 200, "dots per inch", "resolution PDF pages are rendered at")
#: Most time one PDF page may take to render, checked between PDFium's drawing steps.
PDF_RENDER_TIMEOUT_MS = Limit("OCR_PDF_RENDER_TIMEOUT_MS", 10_000, "milliseconds",
                              "most time one PDF page may take to render")

#: Opening an upload (PDFium, qpdf and Pillow: native code, on bytes a client chose) runs in
#: parser processes of each gateway worker process (ocr_api.intake.isolation), so a file that
#: crashes or hangs that code costs its own request only: refused 400 document_undecodable
#: (crashed) or document_too_complex (too slow, too much memory).
PARSER_PROCESSES = Limit("OCR_PARSER_PROCESSES", 2, "processes",
                         "parser processes per gateway worker process (uploads opened at once)")
PARSER_TIMEOUT_MS = Limit("OCR_PARSER_TIMEOUT_MS", 5_000, "milliseconds",
                          "most time opening one upload may take")
PARSER_MEMORY_BYTES = Limit("OCR_PARSER_MEMORY_BYTES", 1024 * 1024 * 1024, "bytes",
                            "address space of one parser process (RLIMIT_AS)")

#: Jobs (POST /api/jobs): the longest document and the largest file one job reads (the
#: buffering proxy lets bodies up to JOB_MAX_BYTES through on /api/jobs only).
JOB_MAX_PAGES = Limit("OCR_JOB_MAX_PAGES", 1000, "pages",
                      "most pages of a document POST /api/jobs reads")
JOB_MAX_BYTES = Limit("OCR_JOB_MAX_BYTES", 100 * 1024 * 1024, "bytes",
                      "largest file accepted by POST /api/jobs")
#: A job page's deadline, from when it is admitted to Triton (ocr_api.admission): a job
#: promises to read every page however long it takes on the machine, so its pages are never
#: held to the interactive TRITON_TIMEOUT_S (a one-page 25 x 50-inch poster scan took longer
#: than 30 s on a 2-core AVX2 server and its job failed). A page past it is delivered again,
#: up to OCR_JOB_PAGE_MAX_DELIVERIES times, then fails its job.
JOB_PAGE_TIMEOUT_S = Limit("OCR_JOB_PAGE_TIMEOUT_S", 600, "seconds",
                           "deadline of one job page in Triton, from its admission")

#: Multipart framing (boundaries, part headers) a body may carry on top of its images' bytes.
MULTIPART_SLACK_BYTES = 64 * 1024


def base64_bytes(size: int) -> int:
    """Bytes of ``size`` bytes written in base64 (4 for every 3, padded): the JSON body limit
    of the Cloud Vision routes is this of OCR_BATCH_MAX_UPLOAD_BYTES (their images come
    base64 in JSON)."""
    return 4 * -(-size // 3)


#: Set by the buffering proxy in front of the gateway (:mod:`ocr_proxy.config`) on the
#: body-less request it sends on when it refused a body over the limit; the gateway answers
#: it with its JSON 413 (and the audit row). The proxy removes it from every client request.
BODY_OVER_LIMIT_HEADER = "X-OCR-Body-Over-Limit"

#: Every limit, in documentation order.
LIMITS = (MAX_UPLOAD_BYTES, BATCH_MAX_IMAGES, BATCH_MAX_UPLOAD_BYTES, MAX_PIXELS,
          MIN_IMAGE_SIDE, LONG_SIDE_MIN, LONG_SIDE_MAX, MAX_PAGES, CONCURRENT_PAGES,
          PDF_DPI, PDF_RENDER_TIMEOUT_MS, PARSER_PROCESSES, PARSER_TIMEOUT_MS, PARSER_MEMORY_BYTES,
          JOB_MAX_PAGES, JOB_MAX_BYTES, JOB_PAGE_TIMEOUT_S)
