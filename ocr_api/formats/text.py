"""The answer as plain text: the whole text in reading order (a document's pages separated by
a form feed), ending with a newline; only the newline when the text was not read."""

from __future__ import annotations

from ..answer import Answer


def render(answer: Answer) -> bytes:
    """UTF-8 bytes of :attr:`Answer.text <ocr_api.answer.Answer.text>` and a newline."""
    return ((answer.text or "") + "\n").encode("utf-8")
