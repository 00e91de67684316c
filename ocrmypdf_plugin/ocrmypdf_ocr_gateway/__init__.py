"""OCRmyPDF plugin: read pages with an OCR gateway (this repository's service) instead of a
local Tesseract.

    pip install ./ocrmypdf_plugin
    export OCR_GATEWAY_URL=http://localhost:8000 OCR_GATEWAY_KEY=<key>
    ocrmypdf --plugin ocrmypdf_ocr_gateway in.pdf out.pdf

OCRmyPDF keeps everything else (rasterising, ``--rotate-pages``, PDF/A, optimisation,
``--sidecar``, ``--jobs``); each page image goes to ``POST /api/ocr`` (:mod:`.engine`), with the
service's refusals waited out or mapped to OCRmyPDF's errors (:mod:`.client`). The hooks below
are OCRmyPDF's plugin interface (``ocrmypdf.pluginspec``).
"""

from __future__ import annotations

from ocrmypdf import hookimpl
from ocrmypdf.exceptions import BadArgsError

from .engine import GatewayEngine
from .options import NAMESPACE, GatewayOptions, add_arguments

#: OCRmyPDF's Tesseract plugin, blocked: its option checks require a local tesseract binary,
#: which a machine that sends its pages to the service need not have.
TESSERACT_PLUGIN = "ocrmypdf.builtin_plugins.tesseract_ocr"


@hookimpl
def initialize(plugin_manager) -> None:
    plugin_manager.set_blocked(TESSERACT_PLUGIN)


@hookimpl
def register_options():
    """The ``gateway`` options, and the blocked Tesseract plugin's option model: OCRmyPDF's
    option validation reads ``options.tesseract`` whichever engine runs (17.x)."""
    from ocrmypdf.builtin_plugins.tesseract_ocr import TesseractOptions

    return {NAMESPACE: GatewayOptions, "tesseract": TesseractOptions}


@hookimpl
def add_options(parser) -> None:
    """The ``--gateway-*`` options; and the blocked Tesseract plugin's own, so that a pipeline
    written for Tesseract (``--tesseract-timeout``...) runs unchanged (they are ignored)."""
    from ocrmypdf.builtin_plugins.tesseract_ocr import TesseractOptions

    add_arguments(parser)
    TesseractOptions.add_arguments_to_parser(parser)


@hookimpl
def check_options(options) -> None:
    """``--ocr-engine tesseract`` asks for what this plugin replaces: said plainly."""
    if getattr(options, "ocr_engine", "auto") == "tesseract":
        raise BadArgsError("--ocr-engine tesseract: the ocrmypdf_ocr_gateway plugin reads "
                           "with the OCR gateway instead of Tesseract; run without "
                           "--plugin ocrmypdf_ocr_gateway to use Tesseract")


@hookimpl
def get_ocr_engine(options):
    """This plugin's engine whenever it is loaded, but for ``--ocr-engine none`` (OCRmyPDF's
    own engine that reads nothing)."""
    if options is not None and getattr(options, "ocr_engine", "auto") == "none":
        return None
    return GatewayEngine()
