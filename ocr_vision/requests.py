"""Cloud Vision's request bodies read into the gateway's terms: the uploaded bytes, the text
features asked, the language hints, and (files) the pages.

Enums come as names or as integers (the Python client's REST transport sends integers, with
``$alt=json;enum-encoding=int``); both are read. Feature type numbers are
``google.cloud.vision.v1.Feature.Type``'s.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from ocr_contract import languages

#: Feature.Type: number -> name.
FEATURE_TYPES = {0: "TYPE_UNSPECIFIED", 1: "FACE_DETECTION", 2: "LANDMARK_DETECTION",
                 3: "LOGO_DETECTION", 4: "LABEL_DETECTION", 5: "TEXT_DETECTION",
                 6: "SAFE_SEARCH_DETECTION", 7: "IMAGE_PROPERTIES", 9: "CROP_HINTS",
                 10: "WEB_DETECTION", 11: "DOCUMENT_TEXT_DETECTION", 12: "PRODUCT_SEARCH",
                 19: "OBJECT_LOCALIZATION"}
#: The features this service answers (both with the same words; Cloud Vision tunes the second
#: for dense documents).
TEXT_FEATURES = ("TEXT_DETECTION", "DOCUMENT_TEXT_DETECTION")
#: Most pages of one file Cloud Vision's files:annotate reads.
FILE_MAX_PAGES = 5


class VisionRequestError(Exception):
    """One request of the batch cannot be read: its ``error`` (the others are still answered).

    Attributes:
        http_status: the HTTP status the problem would have alone (mapped to a
            ``google.rpc.Code`` by :mod:`ocr_vision.status`).
        message: what is wrong, for the client.
    """

    def __init__(self, http_status: int, message: str):
        super().__init__(message)
        self.http_status, self.message = http_status, message


@dataclass(frozen=True)
class VisionRequest:
    """One image or file request.

    Attributes:
        content: the image's or file's bytes.
        languages: the hints this service reads (ISO 639-1 codes it knows), in order.
        pages: the 1-based pages asked of a file (empty: the first ones, up to the limit).
    """

    content: bytes
    languages: tuple[str, ...]
    pages: tuple[int, ...] = ()

    @property
    def parameters(self) -> dict:
        """The gateway's OCR parameters: words with their characters (the symbols), and the
        language when hints were given."""
        parameters = {"detail": "characters"}
        if self.languages:
            parameters["language"] = ",".join(self.languages)
        return parameters


def feature_names(features) -> list[str]:
    """The feature types of a request's ``features`` as names.

    Raises:
        VisionRequestError: not a list of objects with a known ``type``.
    """
    if not isinstance(features, list) or not features:
        raise VisionRequestError(400, "features: give at least one, e.g. "
                                      '[{"type": "DOCUMENT_TEXT_DETECTION"}].')
    names = []
    for feature in features:
        if not isinstance(feature, dict):
            raise VisionRequestError(400, "features: each is an object, e.g. "
                                          '{"type": "DOCUMENT_TEXT_DETECTION"}.')
        kind = feature.get("type", 0)
        name = (FEATURE_TYPES.get(kind) if _is_int(kind) else
                kind if isinstance(kind, str) else None)
        if name not in FEATURE_TYPES.values():
            raise VisionRequestError(400, f"features: unknown type {kind!r} (a name such as "
                                          "DOCUMENT_TEXT_DETECTION, or its number).")
        names.append(name)
    return names


def _is_int(value) -> bool:
    """An integer of the JSON, not a boolean (which Python counts as one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_features(item: dict) -> None:
    """Raises :class:`VisionRequestError` unless the request asks only for text features."""
    other = [name for name in feature_names(item.get("features"))
             if name not in TEXT_FEATURES]
    if other:
        raise VisionRequestError(400, f"features: {', '.join(other)} not supported here; "
                                      f"this service answers {' and '.join(TEXT_FEATURES)}.")


def language_hints(item: dict) -> tuple[str, ...]:
    """``imageContext.languageHints`` this service reads (others are ignored, as Cloud Vision
    ignores hints it cannot use)."""
    context = item.get("imageContext")
    hints = context.get("languageHints") if isinstance(context, dict) else None
    if context is not None and not isinstance(context, dict) or (
            hints is not None and not isinstance(hints, list)):
        raise VisionRequestError(400, "imageContext: an object, its languageHints a list of "
                                      'language codes, e.g. {"languageHints": ["ko"]}.')
    codes = (hint.split("-")[0].lower() for hint in hints or () if isinstance(hint, str))
    return tuple(dict.fromkeys(code for code in codes if code in languages.BY_CODE))


def _content(container: dict | None, name: str) -> bytes:
    container = container if isinstance(container, dict) else {}
    if container.get("source") or container.get("gcsSource"):
        raise VisionRequestError(400, f"{name}: this service fetches nothing (no imageUri, "
                                      "gcsImageUri or gcsSource): send the bytes as base64 in "
                                      f"{name}.content.")
    encoded = container.get("content")
    if not isinstance(encoded, str) or not encoded:
        raise VisionRequestError(400, f"{name}.content: the base64 bytes are missing.")
    # proto3's JSON takes standard or URL-safe base64, padded or not; line breaks are dropped.
    text = "".join(encoded.split()).replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise VisionRequestError(400, f"{name}.content is not valid base64.") from None


def image_request(item) -> VisionRequest:
    """One entry of ``images:annotate``'s ``requests``.

    Raises:
        VisionRequestError: what is wrong with it.
    """
    if not isinstance(item, dict):
        raise VisionRequestError(400, "Each request is an object with image and features.")
    check_features(item)
    return VisionRequest(_content(item.get("image"), "image"), language_hints(item))


def file_request(item, max_pages: int) -> VisionRequest:
    """One entry of ``files:annotate``'s ``requests``: ``inputConfig.content`` (PDF, TIFF or
    GIF), ``pages`` (1-based, -1 the last; default the first ones), at most ``max_pages``.

    Raises:
        VisionRequestError: what is wrong with it.
    """
    if not isinstance(item, dict):
        raise VisionRequestError(400, "Each request is an object with inputConfig and "
                                      "features.")
    check_features(item)
    pages = item.get("pages") or []
    if not isinstance(pages, list) or not all(_is_int(p) and p != 0 for p in pages):
        raise VisionRequestError(400, "pages: a list of page numbers (1-based, -1 the last).")
    if len(set(pages)) != len(pages):
        raise VisionRequestError(400, "pages: each page once.")
    if len(pages) > max_pages:
        raise VisionRequestError(400, f"pages: at most {max_pages} per file here "
                                      "(longer documents: POST /api/jobs).")
    return VisionRequest(_content(item.get("inputConfig"), "inputConfig"),
                         language_hints(item), tuple(pages))
