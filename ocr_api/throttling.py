"""Throttling that holds under concurrency: per key, a rate per minute and a daily quota, both
per image; per client address, a rate of requests without a valid key.

Every count lives in the database, shared by every gunicorn worker and replica, and is
checked and changed in one atomic step, so requests sent at the same moment are counted one
after the other:

- the rates (:func:`take`): a sliding window of the last 60 seconds in one-second steps
  (:class:`~ocr_api.models.RateWindow`), read and written under a lock on the sender's row;
- the daily quota (:class:`DailyQuotaThrottle`): one conditional ``UPDATE`` that adds the
  request's images only while they fit (:class:`~ocr_api.models.QuotaUsage`).

DRF's ``SimpleRateThrottle`` (and this module before) reads the window, decides, and writes it
back: concurrent requests all read the same window and all pass (DRF issues #5181, #5494,
#8127; measured here: 77-95 answered before the first 429 for a limit of 60).

Limits are read from the :class:`~ocr_api.models.ApiKey` row on every request, so edits in
Django admin apply at once. A page of a PDF or multi-page TIFF counts as one image. Views that
take several images or pages in one request set ``throttle_cost(request) -> int``; otherwise a
request costs one image.
"""

from __future__ import annotations

import datetime as dt
import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone
from rest_framework.throttling import BaseThrottle

from .audit import client_ip
from .errors import QuotaExceeded, TooManyImages
from .models import ApiKey, OcrRequest, QuotaUsage, RateWindow

#: Error codes of requests refused before any image was looked at, or before any was sent to
#: Triton (admission's): they use no quota.
NOT_CHARGED = ("rate_limited", "quota_exceeded", "too_many_images", "payload_too_large",
               "missing_image", "overloaded", "key_busy")
#: Length of the rates' sliding window, seconds.
WINDOW_S = 60


def _cost(request, view) -> int:
    cost = getattr(view, "throttle_cost", None)
    return int(cost(request)) if cost is not None else 1


def take(sender: str, cost: int, limit: int, now: float | None = None) -> float:
    """Count ``cost`` against ``sender``'s limit of ``limit`` in any :data:`WINDOW_S` seconds,
    if it fits.

    The window is kept per whole second, so "any 60 seconds" means the 60 whole seconds up to
    and including the current one. Reading, deciding and writing happen in one transaction
    holding the sender's row (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite the
    transaction's write lock, which ``transaction_mode=IMMEDIATE`` takes at its start).

    Args:
        sender: ``key:<prefix>`` or ``address:<ip>``.
        cost: images (or requests) this request counts, at most ``limit``.
        limit: the most the window may hold.
        now: the time (``time.time()``), for tests.

    Returns:
        0 when counted; otherwise the seconds until enough of the window has expired for
        ``cost`` to fit (nothing is counted).
    """
    now = time.time() if now is None else now
    second = int(now)
    # The row first, outside the lock: get_or_create copes with a concurrent creator.
    RateWindow.objects.get_or_create(sender=sender)
    with transaction.atomic():
        row = RateWindow.objects.select_for_update().get(sender=sender)
        counts = {int(s): n for s, n in row.seconds.items() if int(s) > second - WINDOW_S}
        excess = sum(counts.values()) + cost - limit
        if excess > 0:
            for start in sorted(counts):           # the oldest seconds leave first
                excess -= counts[start]
                if excess <= 0:
                    return start + WINDOW_S - now
            return float(WINDOW_S)                 # cost > limit: never fits (callers check)
        counts[second] = counts.get(second, 0) + cost
        row.seconds = {str(s): n for s, n in counts.items()}
        row.save(update_fields=["seconds", "updated"])
    return 0.0


class ApiKeyRateThrottle(BaseThrottle):
    """At most ``ApiKey.rate_per_minute`` images in any 60 seconds (429 rate_limited with
    ``Retry-After``), counted by :func:`take`.

    Raises:
        TooManyImages: one request carries more images than the key's whole rate, so no
            retry could ever succeed.
    """

    def allow_request(self, request, view) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey):
            return True
        cost = _cost(request, view)
        if cost > api_key.rate_per_minute:
            raise TooManyImages(f"{cost} images in one request; this key may send at most "
                                f"{api_key.rate_per_minute} per minute.")
        self.wait_s = take(f"key:{api_key.prefix}", cost, api_key.rate_per_minute)
        return self.wait_s == 0

    def wait(self) -> float:
        """Seconds until enough images have left the window for this request to fit."""
        return max(1.0, self.wait_s)


class UnauthenticatedRateThrottle(BaseThrottle):
    """At most ``OCR_UNAUTHENTICATED_RATE_PER_MINUTE`` requests without a valid key per client
    address (:func:`ocr_api.audit.client_ip`) in any 60 seconds (429 rate_limited with
    ``Retry-After``), counted by :func:`take`; the view asks it only for such requests, so a
    valid key sent from the same address is never refused by it.
    """

    def allow_request(self, request, view) -> bool:
        sender = f"address:{client_ip(request) or 'unknown'}"
        self.wait_s = take(sender, 1, settings.OCR_UNAUTHENTICATED_RATE_PER_MINUTE)
        return self.wait_s == 0

    def wait(self) -> float:
        return max(1.0, self.wait_s)


def _utc_day(now: dt.datetime) -> tuple[dt.date, float]:
    """The UTC day of ``now`` and the seconds left until its end."""
    now = now.astimezone(dt.UTC)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight.date(), (midnight + dt.timedelta(days=1) - now).total_seconds()


def charged_today(api_key: ApiKey, day: dt.date) -> int:
    """Images the audit log charges ``api_key`` on the UTC ``day``: the pages of every row (an
    image is one page) but those refused before any image was looked at (:data:`NOT_CHARGED`)."""
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return (OcrRequest.objects.filter(api_key=api_key, created__gte=start,
                                      created__lt=start + dt.timedelta(days=1))
            .exclude(error_code__in=NOT_CHARGED)
            .aggregate(pages=Sum("page_count"))["pages"] or 0)


def _reserve(api_key: ApiKey, day: dt.date, cost: int) -> bool:
    """Add ``cost`` to the key's usage of ``day`` if it stays within the quota: one
    conditional UPDATE, atomic in every database. A day's row starts from the audit log."""
    limit = api_key.daily_quota
    for _ in range(2):
        rows = QuotaUsage.objects.filter(api_key=api_key, day=day,
                                         images__lte=limit - cost)
        if rows.update(images=F("images") + cost):
            return True
        if QuotaUsage.objects.filter(api_key=api_key, day=day).exists():
            # Full, or made by another request since the UPDATE above (PostgreSQL, a burst
            # of a key's first requests of the day): the UPDATE once more tells which.
            continue
        try:
            with transaction.atomic():
                QuotaUsage.objects.create(api_key=api_key, day=day,
                                          images=charged_today(api_key, day))
        except IntegrityError:                             # another request made it first
            pass
    return False


class DailyQuotaThrottle(BaseThrottle):
    """At most ``ApiKey.daily_quota`` images per UTC day (429 quota_exceeded).

    A request reserves its images atomically before it is processed (:func:`_reserve`); once
    it is answered, :func:`settle_quota` gives back those the audit log does not charge, so
    usage always ends equal to the day's charged audit rows (exact across workers, kept
    across restarts) and parallel requests cannot both take the last image.

    Raises:
        QuotaExceeded: with ``Retry-After`` = seconds until the next UTC midnight.
        TooManyImages: one request carries more images than the whole quota.
    """

    def allow_request(self, request, view) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey) or api_key.daily_quota is None:
            return True
        cost = _cost(request, view)
        if cost > api_key.daily_quota:
            raise TooManyImages(f"{cost} images in one request; this key's daily quota is "
                                f"{api_key.daily_quota}.")
        day, seconds_left = _utc_day(timezone.now())
        if not _reserve(api_key, day, cost):
            raise QuotaExceeded(
                f"The key's daily quota of {api_key.daily_quota} images is used up.",
                retry_after=max(1, int(seconds_left)))
        view.quota_reservation = (api_key, day, cost)
        return True


def settle_quota(view, rows: list[tuple[str, int]]) -> None:
    """Give back the images of a reservation that the audit log does not charge.

    Args:
        view: the view :class:`DailyQuotaThrottle` stored ``quota_reservation`` on (nothing
            to do without one).
        rows: ``(error code, pages)`` of every audit row the request wrote ("" for success).
    """
    reservation = getattr(view, "quota_reservation", None)
    if reservation is None:
        return
    api_key, day, cost = reservation
    charged = sum(pages for code, pages in rows if code not in NOT_CHARGED)
    refund = cost - min(cost, charged)
    if refund:
        QuotaUsage.objects.filter(api_key=api_key, day=day).update(images=F("images") - refund)
    view.quota_reservation = None
