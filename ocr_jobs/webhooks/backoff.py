"""When to try a failed webhook again: exponential backoff with bounded jitter.

Standard Webhooks 1.0.0, "Deliverability and reliability": retry with exponential backoff
and some random jitter, over a schedule spanning hours to days, and honour ``Retry-After``.
The task queue drives the schedule; :func:`ocr_jobs.webhooks.delivery.deliver` makes one
attempt.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable

#: Base delay, in seconds, before retry *n* (after attempt *n* failed): 5 s, 30 s, 2 min,
#: 10 min, 30 min, 2 h, 5 h, 10 h — about 18 h from the first attempt to the last.
RETRY_DELAYS_S: tuple[float, ...] = (5, 30, 120, 600, 1800, 7200, 18000, 36000)
#: Attempts in all: the first one and one per delay.
MAX_ATTEMPTS = len(RETRY_DELAYS_S) + 1
#: Jitter: the delay is the base times a factor drawn uniformly from this range.
JITTER = (0.8, 1.2)
#: The longest a receiver's ``Retry-After`` may postpone the next attempt, in seconds.
MAX_RETRY_AFTER_S = 24 * 3600.0


def delay_bounds_s(attempt: int) -> tuple[float, float] | None:
    """The (shortest, longest) delay in seconds before the attempt after attempt number
    ``attempt`` (1-based), or ``None`` when ``attempt`` was the last one.

    Raises:
        ValueError: ``attempt`` < 1.
    """
    if attempt < 1:
        raise ValueError("attempt numbers start at 1")
    if attempt >= MAX_ATTEMPTS:
        return None
    base = RETRY_DELAYS_S[attempt - 1]
    return base * JITTER[0], base * JITTER[1]


def next_delay_s(attempt: int, *, retry_after_s: float | None = None,
                 random: Callable[[], float] = _random.random) -> float | None:
    """Seconds to wait after attempt number ``attempt`` (1-based) failed, or ``None`` to give
    up (``attempt`` was attempt :data:`MAX_ATTEMPTS`).

    Args:
        attempt: the number of the attempt that just failed.
        retry_after_s: the receiver's ``Retry-After`` (``DeliveryResult.retry_after_s``), if
            any: the delay is at least that, up to :data:`MAX_RETRY_AFTER_S`.
        random: a source of floats in [0, 1) (tests pass a fixed one).
    """
    bounds = delay_bounds_s(attempt)
    if bounds is None:
        return None
    low, high = bounds
    delay = low + (high - low) * random()
    if retry_after_s is not None and retry_after_s > 0:
        delay = max(delay, min(float(retry_after_s), MAX_RETRY_AFTER_S))
    return delay
