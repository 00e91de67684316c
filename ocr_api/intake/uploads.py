"""Reading OCR uploads out of a DRF request: the image bytes and the parameters.

Sizes are checked before and while reading (``OCR_MAX_UPLOAD_BYTES``); nothing here looks
inside the image (that is :mod:`ocr_api.intake.image_probe` and
:mod:`ocr_api.intake.documents`).
"""

from __future__ import annotations

from django.conf import settings
from ocr_contract.limits import BODY_OVER_LIMIT_HEADER, MULTIPART_SLACK_BYTES
from rest_framework.settings import api_settings

from .. import detectors, errors
from ..serializers import OcrParametersSerializer

#: ``request.META`` key of :data:`~ocr_contract.limits.BODY_OVER_LIMIT_HEADER`.
_OVER_LIMIT_META = "HTTP_" + BODY_OVER_LIMIT_HEADER.upper().replace("-", "_")


def check_declared_length(request, limit: int) -> None:
    """Refuse an oversized body from its Content-Length header, before reading it; or one the
    buffering proxy refused (its header :data:`~ocr_contract.limits.BODY_OVER_LIMIT_HEADER`:
    the declared or chunked body crossed the same limit, and nothing of it was sent on).

    Args:
        limit: most bytes of images the request may carry (multipart framing comes on top).

    Raises:
        errors.PayloadTooLarge: the declared body is larger.
    """
    if request.META.get(_OVER_LIMIT_META):
        raise errors.PayloadTooLarge(f"The body is larger than the limit of {limit} bytes.")
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit + MULTIPART_SLACK_BYTES:
        raise errors.PayloadTooLarge(f"The body is {declared} bytes; the limit is {limit}.")


def check_image_size(size: int, limit: int | None = None) -> None:
    """Raises :class:`errors.PayloadTooLarge` for an upload over ``limit`` bytes (default
    ``OCR_MAX_UPLOAD_BYTES``)."""
    limit = settings.OCR_MAX_UPLOAD_BYTES if limit is None else limit
    if size > limit:
        raise errors.PayloadTooLarge(f"The upload is {size} bytes; the limit is {limit}.")


def single_image(request, limit: int | None = None) -> bytes:
    """The one upload of ``POST /api/ocr`` or ``/api/jobs``: multipart field ``image`` or the
    raw body, at most ``limit`` bytes (default ``OCR_MAX_UPLOAD_BYTES``).

    Raises:
        errors.MissingImage: no ``image`` file in a multipart body, or nothing uploaded (an
            empty body or a zero-byte file).
        errors.InvalidParameter: several ``image`` files.
        errors.PayloadTooLarge: the upload is over ``limit``.
    """
    data = request.data
    if isinstance(data, bytes):
        image = data
    elif not request.content_type.startswith("multipart/"):
        image = b""  # an empty raw body: DRF runs no parser on it
    else:
        uploads = request.FILES.getlist("image")
        if not uploads:
            raise errors.MissingImage()
        if len(uploads) > 1:
            raise errors.InvalidParameter(
                f"image: {len(uploads)} files sent; this endpoint takes one "
                "(several images go to /api/ocr/batch).", field="image")
        upload = uploads[0]
        check_image_size(upload.size, limit)
        image = upload.read()
    if not image:
        raise errors.EmptyUpload()
    check_image_size(len(image), limit)
    return image


def parameters(request, file_fields: tuple[str, ...] = ("image",)) -> dict:
    """Validated OCR parameters from the query string and the non-file form fields.

    Returns:
        only the parameters that were sent, converted (floats, int, bool), and ``detector``,
        always, concrete (:func:`ocr_api.detectors.resolved`).

    Raises:
        errors.InvalidParameter: naming the first field at fault, also for a parameter given
            twice (in the query string, the form, or both) and for ``format`` in the form.
    """
    raw: dict[str, str] = {}
    # ?format= picks the output format (DRF's content negotiation), not an OCR parameter; the
    # negotiation reads the query string only, so a form field of that name would be ignored.
    fmt = api_settings.URL_FORMAT_OVERRIDE
    sources = [(request.query_params, {*file_fields, fmt})]
    if not isinstance(request.data, bytes):
        sources.append((request.data, set(file_fields)))
    for source, skipped in sources:
        for key in source:
            if key in skipped:
                continue
            if key == fmt:
                raise errors.InvalidParameter(
                    f"{fmt}: the answer's format goes in the query string (?{fmt}=pdf) or the "
                    "Accept header, not in the form.", field=fmt)
            values = source.getlist(key)
            if key in raw or len(values) != 1:
                # Which one would win is a guess the client should not have to make.
                raise errors.InvalidParameter(f"{key}: given more than once.", field=key)
            raw[key] = values[0]
    serializer = OcrParametersSerializer(data=raw)
    if not serializer.is_valid():
        field, messages = next(iter(serializer.errors.items()))
        raise errors.InvalidParameter(f"{field}: {messages[0]}", field=field)
    # The detector made concrete here, so that a job reads every page with the one chosen
    # when it was accepted.
    return detectors.resolved(dict(serializer.validated_data))
