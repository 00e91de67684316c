"""A long receipt for the tests, rendered with Debian's DejaVu fonts: ``python -m tests.receipt``
writes ``tests/data/documents/receipt_600x4000.png`` and its words, ``receipt_600x4000.json``.

600 x 4000 pixels, white, 60 priced lines of 22-pixel DejaVu Sans Mono (an item, a quantity,
a price) between a header and a total: the shape of a till roll or a long phone screenshot,
whose text shrinks to a third when the long side is scaled to 1280. Deterministic (fixed
items), so the file can be made again byte for byte where the same fonts are installed; the
committed copy is what the tests read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
ITEMS = ("BREAD", "MILK", "EGGS", "APPLES", "RICE", "BUTTER", "CHEESE", "COFFEE", "TEA", "SUGAR",
         "FLOUR", "PASTA", "TOMATO", "ONION", "GARLIC", "LEMON", "BANANA", "ORANGE", "YOGURT",
         "HONEY")
TARGET = Path(__file__).parent / "data" / "documents" / "receipt_600x4000"


def lines() -> list[str]:
    """The receipt's lines, top to bottom."""
    found = ["CORNER MARKET", "12 HIGH STREET", "RECEIPT 004217", ""]
    total = 0
    for number in range(60):
        cents = 95 + (number * 137) % 1900
        total += cents
        found.append(f"{ITEMS[number % len(ITEMS)]:<8} x{number % 4 + 1}  "
                     f"{cents // 100:>3}.{cents % 100:02d}")
    found += ["", f"TOTAL {total // 100}.{total % 100:02d}", "THANK YOU"]
    return found


def render() -> tuple[Image.Image, list[str]]:
    image = Image.new("RGB", (600, 4000), "white")
    draw = ImageDraw.Draw(image)
    regular, bold = ImageFont.truetype(FONT, 22), ImageFont.truetype(BOLD, 26)
    y = 60
    for number, text in enumerate(lines()):
        if text:
            draw.text((40, y), text, fill="black", font=bold if number < 3 else regular)
        y += 60 if number < 4 else 58
    return image, [word for text in lines() for word in text.split()]


def main() -> int:
    image, words = render()
    image.save(TARGET.with_suffix(".png"), optimize=True)
    TARGET.with_suffix(".json").write_text(json.dumps({"words": words}, indent=1) + "\n")
    print(f"{TARGET}.png: {len(words)} words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
