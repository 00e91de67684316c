"""The answer's output formats, chosen by DRF's content negotiation: ``?format=`` (``json``,
``text``, ``hocr``, ``pdf``) or the ``Accept`` header.

- ``json`` (``application/json``, the default): the answer as documented.
- ``text`` (``text/plain``): the whole text in reading order (a document's pages separated
  by a form feed).
- ``hocr`` (``application/xhtml+xml``): hOCR 1.2 (:mod:`ocr_api.hocr`).
- ``pdf`` (``application/pdf``): a searchable PDF of what was sent (:mod:`ocr_api.searchable_pdf`).

Errors are always the JSON error shape, whatever format was asked.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer

from . import hocr, searchable_pdf


class _AnswerRenderer(BaseRenderer):
    """Renders an answer in a format of its own, and errors (and anything that is not an
    answer) as the API's JSON."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        context = renderer_context or {}
        response = context.get("response")
        if response is not None and (response.status_code >= 400 or not _is_answer(data)):
            response["Content-Type"] = "application/json"
            return JSONRenderer().render(data, accepted_media_type, renderer_context)
        return self.render_answer(data, context)

    def render_answer(self, answer: dict, context: dict) -> bytes:
        raise NotImplementedError


def _is_answer(data) -> bool:
    return isinstance(data, dict) and ("boxes" in data or "pages" in data)


class PlainTextRenderer(_AnswerRenderer):
    media_type = "text/plain"
    format = "text"
    charset = "utf-8"

    def render_answer(self, answer, context):
        return (answer.get("text", "") + "\n").encode("utf-8")


class HocrRenderer(_AnswerRenderer):
    media_type = "application/xhtml+xml"
    format = "hocr"
    charset = "utf-8"

    def render_answer(self, answer, context):
        return hocr.render(answer, _dpis(answer, context))


class SearchablePdfRenderer(_AnswerRenderer):
    media_type = "application/pdf"
    format = "pdf"
    charset = None
    render_style = "binary"

    def render_answer(self, answer, context):
        view = context.get("view")
        response = context.get("response")
        if response is not None:
            response["Content-Disposition"] = 'inline; filename="ocr.pdf"'
        return searchable_pdf.render(answer, view.document_for_output())


def _dpis(answer: dict, context: dict) -> list[float | None] | None:
    """Per page the dpi a PDF page was rendered at (for hOCR's ``scan_res``), when known."""
    view = context.get("view")
    document = getattr(view, "document_for_output", lambda: None)()
    if document is None or not document.page_points:
        return None
    return [72.0 * page["width"] / points[0]
            for page, points in zip(hocr.pages_of(answer), document.page_points)]


#: The formats an answer is available in, JSON first (the default).
RESULT_RENDERERS = [JSONRenderer, PlainTextRenderer, HocrRenderer, SearchablePdfRenderer]


class FormatNegotiation(DefaultContentNegotiation):
    """DRF's content negotiation, with an unknown ``?format=`` answered 406 ``not_acceptable``
    naming the formats (DRF itself answers it with a bare 404)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            names = ", ".join(renderer.format for renderer in renderers)
            raise exceptions.NotAcceptable(
                f"format {request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)!r} is not "
                f"available here; use one of: {names}.") from None
