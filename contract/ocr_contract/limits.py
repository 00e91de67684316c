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
        value = (environ.get(self.setting) or "").strip()
        if not value:
            return self.default
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{self.setting} must be an integer, not {value!r}") from None


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

#: Pages of a PDF or multi-page TIFF read in one request (a longer one is sent in parts);
#: counted from the document's structure before anything is rendered.
MAX_PAGES = Limit("OCR_MAX_PAGES", 10, "pages",
                  "most pages of a document POST /api/ocr reads (send longer ones in parts)")
#: Resolution PDF pages are rendered at (a 10 pt line is then ~28 pixels high before the
#: detector's resize); lowered for a page that would exceed OCR_MAX_PIXELS.
PDF_DPI = Limit("OCR_PDF_DPI", 200, "dots per inch", "resolution PDF pages are rendered at")
#: Most time one PDF page may take to render, checked between PDFium's drawing steps.
PDF_RENDER_TIMEOUT_MS = Limit("OCR_PDF_RENDER_TIMEOUT_MS", 10_000, "milliseconds",
                              "most time one PDF page may take to render")

#: Multipart framing (boundaries, part headers) a body may carry on top of its images' bytes.
MULTIPART_SLACK_BYTES = 64 * 1024
#: Set by the buffering proxy in front of the gateway (:mod:`ocr_embedded.proxy`) on the
#: body-less request it sends on when it refused a body over the limit; the gateway answers
#: it with its JSON 413 (and the audit row). The proxy removes it from every client request.
BODY_OVER_LIMIT_HEADER = "X-OCR-Body-Over-Limit"

#: Every limit, in documentation order.
LIMITS = (MAX_UPLOAD_BYTES, BATCH_MAX_IMAGES, BATCH_MAX_UPLOAD_BYTES, MAX_PIXELS,
          MIN_IMAGE_SIDE, LONG_SIDE_MIN, LONG_SIDE_MAX, MAX_PAGES, PDF_DPI,
          PDF_RENDER_TIMEOUT_MS)
