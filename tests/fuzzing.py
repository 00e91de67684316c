"""Seeded mutations of real documents, for the fuzz tests and ``bench.fuzz``.

Each mutation is what damaged files look like in the wild: a broken scanner, a truncated
upload, a careless editor. A few bytes flipped; the file cut short; a chunk repeated or
deleted; and, for PDFs, an object reference, a ``/Length``, a ``/Count`` or an xref offset
made huge, zero or negative. The same ``(seed, source)`` gives the same cases every time
(``random.Random(seed)``), so a failing case can be named by its seed and index and kept as
a regression file.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable, Iterator

#: PDF numbers that steer the parser: stream lengths, page counts, xref sizes and offsets,
#: object references.
_NUMBERS_AFTER = re.compile(rb"(?:/Length|/Count|/Size|/Prev|startxref)\s+(\d+)|(\d+) \d+ R")


@dataclass(frozen=True)
class Case:
    """One mutated file: ``name`` says how it was made (source, seed, index, operation)."""

    name: str
    data: bytes


def _flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randrange(1, len(data))]


def _repeat(rng: random.Random, data: bytes) -> bytes:
    start = rng.randrange(len(data))
    end = min(len(data), start + rng.randint(1, 4096))
    return data[:end] + data[start:end] * rng.randint(1, 4) + data[end:]


def _delete(rng: random.Random, data: bytes) -> bytes:
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randint(1, 4096):]


def _renumber(rng: random.Random, data: bytes) -> bytes:
    """A PDF's structural number (a reference, ``/Length``, ``/Count``, ``/Size``, ``/Prev``,
    ``startxref``) made huge, zero, negative or off by one; other files: a flip."""
    found = list(_NUMBERS_AFTER.finditer(data))
    if not found:
        return _flip(rng, data)
    out = data
    # From the last to the first, so the earlier matches' offsets still hold.
    for match in sorted(rng.sample(found, min(len(found), rng.randint(1, 3))),
                        key=lambda m: m.start(), reverse=True):
        group = 1 if match.group(1) is not None else 2
        start, end = match.span(group)
        value = int(out[start:end])
        new = rng.choice([2 ** 31 - 1, 2 ** 63, 0, -1, -value, value + 1, value - 1,
                          value * 1000])
        out = out[:start] + str(new).encode() + out[end:]
    return out


#: The operations, by name.
OPERATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "flip": _flip, "truncate": _truncate, "repeat": _repeat, "delete": _delete,
    "renumber": _renumber,
}


def mutations(source: str, data: bytes, seed: int, count: int) -> Iterator[Case]:
    """``count`` mutated copies of ``data``, the same for the same arguments.

    Args:
        source: the file's name, for the cases' names.
        data: the original file's bytes (non-empty).
        seed: any integer.
        count: how many cases.
    """
    rng = random.Random(f"{source}:{seed}")
    names = sorted(OPERATIONS)
    for index in range(count):
        operation = rng.choice(names)
        mutated = OPERATIONS[operation](rng, data)
        if rng.random() < 0.25:              # sometimes two kinds of damage at once
            second = rng.choice(names)
            mutated = OPERATIONS[second](rng, mutated or data) or mutated
            operation += "+" + second
        yield Case(f"{source}:{seed}:{index}:{operation}", mutated)
