"""Request body parsers for ``POST /api/ocr``: a raw image or PDF body (multipart is DRF's)."""

from rest_framework.parsers import BaseParser


class RawImageParser(BaseParser):
    """A raw image body (``Content-Type: image/*``): ``request.data`` is the bytes.

    The content type only selects this parser; the format is sniffed from the bytes later.
    """

    media_type = "image/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return stream.read() if stream is not None else b""


class OctetStreamParser(RawImageParser):
    """A raw image body sent as ``application/octet-stream``."""

    media_type = "application/octet-stream"


class PdfParser(RawImageParser):
    """A raw PDF body (``application/pdf``); like an image, sniffed from the bytes later."""

    media_type = "application/pdf"
