"""The OCR engine OCRmyPDF calls per page: the page image sent to the gateway's ``/api/ocr``.

- ``generate_hocr``: the service's hOCR answer (``format=hocr``) as OCRmyPDF's hOCR file, which
  its fpdf2 renderer (the default) turns into the page's text layer; the sidecar text is its
  lines' text content (:func:`hocr_text`).
- ``generate_pdf`` (``--pdf-renderer sandwich``): that hOCR drawn as a text-only page by
  OCRmyPDF's own fpdf2 renderer, sized to the image.
- ``get_orientation`` (``--rotate-pages``): the answer's ``image.angle``, degrees clockwise,
  which is Tesseract's "Orientation in degrees" that OCRmyPDF expects.
- ``languages``: Tesseract's names of the service's languages (``/api/models``), so ``-l
  eng+deu`` means ``language=en,de``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from xml.etree import ElementTree

from ocrmypdf.exceptions import MissingDependencyError
from ocrmypdf.hocrtransform import HocrParser
from ocrmypdf.pluginspec import OcrEngine, OrientationConfidence

from .client import GatewayClient, PageRefused, ServiceFailed, client_for
from .options import NAMESPACE, GatewayOptions

__version__ = "1.0.0"
XHTML = "http://www.w3.org/1999/xhtml"

#: OCRmyPDF turns a page when the engine's confidence is at least ``--rotate-pages-threshold``
#: (Tesseract's units, default 14; 15 is "very confident"). The service answers an angle, not a
#: confidence: the evidence is the words it read at that angle, one unit each, up to this.
FULL_CONFIDENCE = 15.0


def _options(options) -> GatewayOptions:
    return getattr(options, NAMESPACE)


def _client(options) -> GatewayClient:
    return client_for(_options(options))


@lru_cache(maxsize=4)
def _service_languages(gateway: GatewayOptions) -> dict[str, str]:
    """Tesseract's names to the service's codes, asked once per process."""
    return client_for(gateway).languages()


def _language_field(options) -> str:
    """The ``language`` field for OCRmyPDF's ``-l`` languages (``["eng", "deu"]`` ->
    ``"en,de"``); the check that each exists ran before (:meth:`GatewayEngine.languages`)."""
    codes = _service_languages(_options(options))
    return ",".join(codes[name] for name in options.languages)


def hocr_text(hocr: bytes) -> str:
    """The text of a one-page hOCR answer as the service reads it: each ``ocr_line``'s text
    content (the service writes a space after a word only where its text has one), lines by
    newlines, in the file's order (the service writes its lines in reading order). Not through
    OCRmyPDF's parser, which NFKC-normalises words (``½`` becomes ``1⁄2``) for its text layer
    and joins every word with a space; the sidecar keeps the service's text."""
    root = ElementTree.fromstring(hocr)
    lines = ("".join(line.itertext()).strip() for line in root.iter(f"{{{XHTML}}}span")
             if line.get("class") == "ocr_line")
    return "\n".join(line for line in lines if line)


class GatewayEngine(OcrEngine):
    """OCRmyPDF's OCR engine backed by the OCR gateway (see the module's docstring)."""

    @staticmethod
    def version() -> str:
        return __version__

    @staticmethod
    def creator_tag(options) -> str:
        return f"OCR gateway plugin {__version__}"

    def __str__(self) -> str:
        return f"OCR gateway plugin {__version__}"

    @staticmethod
    def languages(options) -> set[str]:
        """Tesseract's names of the languages the service reads (``eng``, ``kor``,
        ``chi_sim``...), from its ``/api/models``: the first request of a run, so a wrong key
        or URL fails here, before any page is rasterised.

        Raises:
            KeyRefused: the key refused (OCRmyPDF exits 1, bad arguments).
            MissingDependencyError: the service unreachable, failing, or not at that URL
                (exits 3, as OCRmyPDF does when Tesseract is missing).
        """
        try:
            return set(_service_languages(_options(options)))
        except (ServiceFailed, PageRefused) as exc:       # down, or not this service's URL
            raise MissingDependencyError(str(exc)) from exc

    @staticmethod
    def get_orientation(input_file: Path, options) -> OrientationConfidence:
        """How far the page is turned, degrees clockwise (0, 90, 180, 270): the service's
        ``image.angle`` for the preview image; confidence one unit per word read, up to
        :data:`FULL_CONFIDENCE` (0 on a page without words, which is never turned)."""
        answer = json.loads(_client(options).read_page(
            input_file, {"language": _language_field(options)}))
        words = sum(len(line.get("words", ())) for line in answer["lines"])
        return OrientationConfidence(angle=int(answer["image"]["angle"]) % 360,
                                     confidence=min(float(words), FULL_CONFIDENCE))

    @staticmethod
    def get_deskew(input_file: Path, options) -> float:
        """0: the service levels each line itself (its hOCR baselines carry the tilt), and
        answers no page skew to straighten the image by."""
        return 0.0

    @staticmethod
    def generate_hocr(input_file: Path, output_hocr: Path, output_text: Path,
                      options) -> None:
        """The page's hOCR (the service's ``format=hocr``) and its text (:func:`hocr_text`)."""
        hocr = _client(options).read_page(
            input_file, {"language": _language_field(options)}, "hocr")
        output_hocr.write_bytes(hocr)
        output_text.write_text(hocr_text(hocr), encoding="utf-8")

    @staticmethod
    def generate_pdf(input_file: Path, output_pdf: Path, output_text: Path,
                     options) -> None:
        """A text-only PDF page the image's size (``--pdf-renderer sandwich``): the page's
        hOCR drawn invisible by OCRmyPDF's fpdf2 renderer, at the image's resolution."""
        from ocrmypdf.font import MultiFontManager
        from ocrmypdf.fpdf_renderer import Fpdf2PdfRenderer
        from PIL import Image

        hocr = output_pdf.with_suffix(".hocr")
        GatewayEngine.generate_hocr(input_file, hocr, output_text, options)
        page = HocrParser(hocr).parse()
        with Image.open(input_file) as image:        # OCRmyPDF writes its dpi in every image
            dpi = float(image.info.get("dpi", (page.dpi or 72.0,))[0])
        Fpdf2PdfRenderer(page=page, dpi=dpi, multi_font_manager=MultiFontManager(),
                         invisible_text=True).render(output_pdf)
