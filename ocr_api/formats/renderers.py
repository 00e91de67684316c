"""The answer's output formats, chosen by DRF's content negotiation: ``?format=`` (``json``,
``text``, ``hocr``, ``pdf``) or the ``Accept`` header.

- ``json`` (``application/json``, the default): the answer as documented.
- ``text`` (``text/plain``): the whole text in reading order (:mod:`ocr_api.formats.text`).
- ``hocr`` (``application/xhtml+xml``): hOCR 1.2 (:mod:`ocr_api.formats.hocr`).
- ``pdf`` (``application/pdf``): a searchable PDF of what was sent
  (:mod:`ocr_api.formats.searchable_pdf`).

A view answers with an :class:`AnswerResponse`: its data is the JSON body, and it carries the
:class:`~ocr_api.answer.Answer` the other formats are made from. Errors (and any response
without an answer) are always the JSON error shape, whatever format was asked.
"""

from __future__ import annotations

import inspect

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from ..answer import Answer
from . import hocr, searchable_pdf, text


class AnswerResponse(Response):
    """A successful OCR answer.

    Args:
        answer: what the formats other than JSON render.
        data: the JSON body (``answer.body()`` and the request's own keys).
    """

    def __init__(self, answer: Answer, data: dict, **kwargs):
        super().__init__(data, **kwargs)
        self.answer = answer


class _AnswerRenderer(BaseRenderer):
    """Renders an :class:`AnswerResponse`'s answer in a format of its own, and errors (and any
    other response) as the API's JSON."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        answer = getattr(response, "answer", None)
        if answer is None or response.status_code >= 400:
            if response is not None:
                response["Content-Type"] = "application/json"
            return JSONRenderer().render(data, accepted_media_type, renderer_context)
        return self.render_answer(answer, response)

    def render_answer(self, answer: Answer, response: Response) -> bytes:
        raise NotImplementedError


class PlainTextRenderer(_AnswerRenderer):
    """The whole text in reading order, UTF-8, the pages joined by a form feed."""

    media_type = "text/plain"
    format = "text"
    charset = "utf-8"

    def render_answer(self, answer, response):
        return text.render(answer)


class HocrRenderer(_AnswerRenderer):
    """hOCR 1.2 (XHTML): pages, paragraphs, lines and words with their boxes and confidences."""

    media_type = "application/xhtml+xml"
    format = "hocr"
    charset = "utf-8"

    def render_answer(self, answer, response):
        return hocr.render(answer)


class SearchablePdfRenderer(_AnswerRenderer):
    """A searchable PDF: each page's image with the text laid invisibly over it."""

    media_type = "application/pdf"
    format = "pdf"
    charset = None
    render_style = "binary"

    def render_answer(self, answer, response):
        response["Content-Disposition"] = 'inline; filename="ocr.pdf"'
        return searchable_pdf.render(answer)


#: The formats an answer is available in, JSON first (the default).
RESULT_RENDERERS = [JSONRenderer, PlainTextRenderer, HocrRenderer, SearchablePdfRenderer]


def answer_responses(json_response: OpenApiResponse) -> dict:
    """The OpenAPI 200 of an endpoint answering in :data:`RESULT_RENDERERS`: ``json_response``
    under JSON, and each other format as what it is (text and hOCR a string, the PDF bytes),
    described by its renderer's docstring."""
    responses = {(200, JSONRenderer.media_type): json_response}
    for renderer in RESULT_RENDERERS[1:]:
        kind = OpenApiTypes.BINARY if renderer.render_style == "binary" else OpenApiTypes.STR
        responses[(200, renderer.media_type)] = OpenApiResponse(
            kind, description=f"`format={renderer.format}`: {inspect.getdoc(renderer)}")
    return responses


class FormatNegotiation(DefaultContentNegotiation):
    """DRF's content negotiation (every API view's: ``DEFAULT_CONTENT_NEGOTIATION_CLASS``),
    with its refusals naming what the endpoint offers: an unknown ``?format=`` is 406
    ``not_acceptable`` listing the formats (DRF itself answers it with a bare 404), and an
    ``Accept`` header no renderer matches is 406 listing the media types."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            names = ", ".join(renderer.format for renderer in renderers)
            raise exceptions.NotAcceptable(
                f"format {request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)!r} is not "
                f"available here; use one of: {names}.") from None
        except exceptions.NotAcceptable:
            types = ", ".join(renderer.media_type for renderer in renderers)
            raise exceptions.NotAcceptable(
                f"Accept {request.headers.get('Accept', '')!r} matches nothing this endpoint "
                f"answers; it answers: {types} (or ?format=).") from None
