"""``python -m bench.languages``: which recognizer reads Turkish, PP-OCR or Tesseract, and how
much of PP-OCR's reading of a Turkish page shows letters only Turkish writes.

Drawn Turkish pages (:data:`LINES`, 15 lines written for this benchmark, not the lines the
tests draw) in each of the test pages' fonts (:data:`tests.image_factory.LETTER_FONTS`: Debian's
DejaVu and Liberation) at 22 and 32 px, each clean and as a photo-like copy (turned up to 2
degrees, blurred, dimmed, noise, JPEG quality 45). Every page goes through an embedded Triton
twice, with ``language=en`` (PP-OCR reads every line) and ``language=tr`` (Tesseract
``tur+eng`` reads the same line boxes: detection does not depend on the language). Scores:
all words as tokens (:func:`ocr_pipeline.text_evaluation.score_text`, casefolded), and the
words holding a letter PP-OCR folds (Turkish's
:attr:`~ocr_contract.languages.Language.letters`) lower-cased and exact, so that İ read as I
counts as wrong (casefolding would make them one). Also the share of the letters PP-OCR read
that are Turkish's own (what ``auto`` recognises a Turkish page by,
:data:`ocr_pipeline.routing.AUTO_MIN_OWN_SHARE`). This chose Tesseract for ``tr``
(:mod:`ocr_contract.languages`).

Starts its own embedded Triton on free ports. Writes ``bench/results/languages-<time>.md``
(``languages-example.md``: 2026-12-05, Intel Xeon with AMX, 2 cores, tesseract-ocr-tur 4.1.0).
"""

from __future__ import annotations

import argparse
import io
import random
import tempfile
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from ocr_contract.languages import BY_CODE
from ocr_inference.client import TritonClient
from ocr_pipeline.text_evaluation import TextScore, score_text
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from bench.words import REPOSITORY, RESULTS, serve
from tests.image_factory import LETTER_FONTS, encode

LINES = (
    "Işık kapanınca çocuklar odasına gitti", "İstanbul Büyükşehir Belediyesi Başkanlığı",
    "Ağaçların altında ılık bir rüzgâr esiyordu",
    "NÜFUS VE VATANDAŞLIK İŞLERİ GENEL MÜDÜRLÜĞÜ", "Şubat ayında kış çok soğuk geçti",
    "Adresi: Kızılay Mah. Atatürk Bulvarı No 12", "Sıra No / Kayıt Tarihi / Düzenleyen",
    "ÖĞRENCİ BELGESİ ŞIRNAK ÜNİVERSİTESİ", "Ayşe ile Mehmet yağmurda ıslandı",
    "Fatura Tutarı: 1.250,00 TL (KDV dahil)", "İmza ve Mühür / Onaylayan Kişi",
    "TAŞINMAZ SATIŞ SÖZLEŞMESİ", "Doğum Yeri: Iğdır, Türkiye",
    "Kılıç balığı ızgara, pilav ve salata", "SİPARİŞ NUMARASI / ÖDEME ŞEKLİ",
)
SIZES = (22, 32)
#: The letters PP-OCR folds into Latin ones: Turkish's own.
FOLDED = BY_CODE["tr"].letters
#: Taken off a word's ends before words are compared exactly.
PUNCTUATION = ".,:;()/"


def page(font: str, size: int) -> Image.Image:
    """:data:`LINES` drawn black on white in ``font`` at ``size`` px."""
    face = ImageFont.truetype(font, size)
    step = int(size * 1.9)
    image = Image.new("RGB", (int(max(face.getlength(line) for line in LINES)) + 60,
                              len(LINES) * step + 60), "white")
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(LINES):
        draw.text((30, 30 + row * step), line, font=face, fill="black")
    return image


def photo_like(image: Image.Image, seed: int) -> Image.Image:
    """``image`` turned up to 2 degrees, blurred, dimmed, with noise, saved as JPEG (q 45)."""
    rng = random.Random(seed)
    image = image.rotate(rng.uniform(-2, 2), expand=True, fillcolor="white",
                         resample=Image.BICUBIC)
    image = image.filter(ImageFilter.GaussianBlur(rng.uniform(0.6, 1.2)))
    pixels = np.asarray(image).astype(np.float32) * rng.uniform(0.75, 0.9) + rng.uniform(10, 40)
    pixels += np.random.default_rng(seed).normal(0, 6, pixels.shape)
    data = encode(Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)), "JPEG", quality=45)
    return Image.open(io.BytesIO(data)).convert("RGB")


def exact_words(text: str) -> Counter:
    """The words of ``text``, lower-cased, :data:`PUNCTUATION` taken off their ends."""
    return Counter(word.strip(PUNCTUATION).lower() for word in text.split())


def own_share(text: str) -> float:
    """Share of the letters of ``text`` that are Turkish's own (:data:`FOLDED`)."""
    letters = [char for char in text if char.isalpha()]
    return sum(char in FOLDED for char in letters) / max(len(letters), 1)


def scores(client: TritonClient) -> tuple[dict, dict]:
    """``{(kind, language): (all words, words with a folded letter)}`` as TextScores, and
    ``{kind: [own-letter share of PP-OCR's reading of each page]}``."""
    words = [word for line in LINES for word in line.split()]
    folded = exact_words(" ".join(word for word in words if set(FOLDED) & set(word)))
    totals: dict = {}
    shares: dict = {}
    for number, font in enumerate(LETTER_FONTS):
        for size in SIZES:
            clean = page(font, size)
            copies = (("clean", clean), ("photo-like", photo_like(clean, number * 100 + size)))
            for kind, image in copies:
                data = encode(image)
                for language in ("en", "tr"):
                    text = client.infer(data, {"language": language}).text
                    if language == "en":
                        shares.setdefault(kind, []).append(own_share(text))
                    every, own = totals.setdefault((kind, language), (TextScore(), TextScore()))
                    got = score_text(text, words)
                    every.matched += got.matched
                    every.read += got.read
                    every.expected += got.expected
                    own.matched += sum((exact_words(text) & folded).values())
                    own.expected += sum(folded.values())
    return totals, shares


def markdown(totals: dict, shares: dict, when: str) -> str:
    lines = ["# Turkish: PP-OCR (language=en) against Tesseract tur+eng (language=tr)", "",
             when, "",
             "| pages | reader | all words (recall) | words with ı, İ, ş, ğ (exact, recall) |",
             "| --- | --- | --- | --- |"]
    for (kind, language), (every, folded) in totals.items():
        reader = "PP-OCR" if language == "en" else "Tesseract tur+eng"
        lines.append(f"| {kind} | {reader} | {every.recall:.3f} "
                     f"({every.matched}/{every.expected}) | {folded.recall:.3f} "
                     f"({folded.matched}/{folded.expected}) |")
    lines += ["", "Letters only Turkish writes, share of the letters PP-OCR read per page:"]
    lines += [f"- {kind}: lowest {min(found):.3f}, median {float(np.median(found)):.3f}"
              for kind, found in shares.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m bench.languages", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with tempfile.TemporaryDirectory() as folder:
        server = serve(REPOSITORY, Path(folder) / "triton.log")
        try:
            totals, shares = scores(TritonClient(server.grpc_url, timeout_s=600))
        finally:
            server.stop()
    report = markdown(totals, shares, when)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"languages-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
