"""Text lines read by Tesseract, for the scripts the PP-OCR recognizer lacks (Hangul, Thai,
Devanagari, Cyrillic) and for Turkish, whose own letters it folds (:mod:`ocr_contract.languages`,
which also says where the language data is).

Tesseract runs through its library API (tesserocr, which bundles libtesseract): one engine
per language combination, started on first use and reused for every later crop, in single
text-line mode (``--psm 7``). Its language data is Debian's ``tesseract-ocr-<lang>`` packages.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from .recognition import Reading, Span

#: Height Tesseract's crops are scaled to, pixels: its LSTM models read best with text lines
#: some 30-60 pixels high.
HEIGHT = 64
#: Border added around each line image, pixels (Tesseract wants space around a line).
BORDER = 10
#: Margin around a box before cropping, as a share of its height: less than PP-OCR's
#: (recognition.CROP_MARGIN), since Tesseract's confidence drops when a neighbouring line shows.
#: Measured on korean.png's boxes at long side 640 and 1280: 0.03 reads all six words (0 and
#: 0.05 misread one each).
CROP_MARGIN = 0.03
def line_image(crop: np.ndarray) -> np.ndarray:
    """A crop as Tesseract's input: grayscale uint8 ``[HEIGHT, w]`` (aspect ratio kept,
    bicubic)."""
    gray = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY) if crop.ndim == 3 else crop
    width = max(1, round(gray.shape[1] * HEIGHT / gray.shape[0]))
    return cv2.resize(gray, (width, HEIGHT), interpolation=cv2.INTER_CUBIC)


def _span(text: str, box: tuple[int, int, int, int], confidence: float) -> Span:
    """A Tesseract box ``(x0, y0, x1, y1)`` in the bordered image as a :class:`Span` of the
    line image (the :data:`BORDER` taken off), confidence 0..100 as 0..1."""
    x0, y0, x1, y1 = (float(v) - BORDER for v in box)
    return Span(text, x0, x1, max(0.0, min(1.0, confidence / 100.0)), y0, y1)


class TesseractReader:
    """Tesseract engines by language combination, each started once.

    Args:
        tessdata: the language-data folder (:func:`ocr_contract.languages.tessdata_dir`).

    Raises:
        ImportError: tesserocr is not installed.
    """

    def __init__(self, tessdata: Path):
        import tesserocr

        self._tesserocr = tesserocr
        self.tessdata = Path(tessdata)
        self._engines: dict[str, object] = {}

    @property
    def started(self) -> list[str]:
        """The language combinations whose engine is running, in the order started."""
        return list(self._engines)

    def available(self) -> set[str]:
        """Language data present in :attr:`tessdata` (``eng``, ``kor``...)."""
        return {p.stem for p in self.tessdata.glob("*.traineddata")}

    def _engine(self, languages: str):
        engine = self._engines.get(languages)
        if engine is None:
            engine = self._tesserocr.PyTessBaseAPI(
                path=str(self.tessdata) + os.sep, lang=languages,
                psm=self._tesserocr.PSM.SINGLE_LINE)
            self._engines[languages] = engine
        return engine

    def read(self, lines: list[np.ndarray], languages: str) -> list[Reading]:
        """Read text lines.

        Args:
            lines: grayscale uint8 ``[h, w]`` line images (:func:`line_image`).
            languages: Tesseract languages joined by ``+`` (``kor+eng``).

        Returns:
            one :class:`~ocr_pipeline.recognition.Reading` per line; the score is Tesseract's
            mean word confidence / 100; its ``words`` and ``characters`` are Tesseract's own
            word and symbol boxes (its result iterator at ``RIL.WORD`` / ``RIL.SYMBOL``) in
            the pixels of the line image given, confidences / 100.

        Raises:
            RuntimeError: Tesseract cannot load ``languages`` (missing language data).
        """
        from PIL import Image

        engine = self._engine(languages)
        readings = []
        for line in lines:
            padded = cv2.copyMakeBorder(line, BORDER, BORDER, BORDER, BORDER,
                                        cv2.BORDER_REPLICATE)
            engine.SetImage(Image.fromarray(padded))
            text = " ".join(engine.GetUTF8Text().split())
            words, characters = self._boxes(engine) if text else ((), ())
            readings.append(Reading(text, engine.MeanTextConf() / 100.0 if text else 0.0,
                                    words=words, characters=characters))
        return readings

    def _boxes(self, engine) -> tuple[tuple[Span, ...], tuple[tuple[Span, ...], ...]]:
        """The words of the last recognised line and each word's symbols, as spans in the
        line image's pixels (the :data:`BORDER` taken off)."""
        ril = self._tesserocr.RIL
        words: list[Span] = []
        characters: list[list[Span]] = []
        iterator = engine.GetIterator()
        if iterator is None:
            return (), ()
        while True:
            text = iterator.GetUTF8Text(ril.SYMBOL)
            box = iterator.BoundingBox(ril.SYMBOL)
            if iterator.IsAtBeginningOf(ril.WORD):
                word_text = iterator.GetUTF8Text(ril.WORD)
                word_box = iterator.BoundingBox(ril.WORD)
                if word_text and word_text.strip() and word_box:
                    words.append(_span(word_text.strip(), word_box,
                                       iterator.Confidence(ril.WORD)))
                    characters.append([])
            if words and text and text.strip() and box:
                characters[-1].append(_span(text, box, iterator.Confidence(ril.SYMBOL)))
            if not iterator.Next(ril.SYMBOL):
                break
        return tuple(words), tuple(tuple(c) for c in characters)

    def close(self) -> None:
        """End every engine."""
        for engine in self._engines.values():
            engine.End()
        self._engines.clear()
