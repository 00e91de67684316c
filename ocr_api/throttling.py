"""Per-key throttling: a sliding-window rate per minute and a daily quota, both per image; and
per client address, a rate of requests without a valid key.

Limits are read from the :class:`~ocr_api.models.ApiKey` row on every request, so edits in
Django admin apply at once. Views that take several images in one request set
``throttle_cost(request) -> int``; otherwise a request costs one image.
"""

from __future__ import annotations

import datetime as dt
import time

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from .audit import client_ip
from .errors import QuotaExceeded, TooManyImages
from .models import ApiKey, OcrRequest


#: Error codes of requests refused before any image was looked at: they use no quota.
NOT_CHARGED = ("rate_limited", "quota_exceeded", "too_many_images", "payload_too_large",
               "missing_image")


def _cost(request, view) -> int:
    cost = getattr(view, "throttle_cost", None)
    return int(cost(request)) if cost is not None else 1


class ApiKeyRateThrottle(BaseThrottle):
    """At most ``ApiKey.rate_per_minute`` images in any 60-second window (429 rate_limited).

    The window's timestamps are kept in the shared Django cache (``CACHE_URL``: the database by
    default, so every gunicorn worker and replica sees the same history). Reading and writing
    the history is not atomic: concurrent requests of one key may overshoot by a few images.
    The sliding-window scheme is DRF's ``SimpleRateThrottle``'s, extended to a per-key rate and
    a per-request cost.

    Raises:
        TooManyImages: one request carries more images than the key's whole rate, so no
            retry could ever succeed.
    """

    duration_s = 60
    cache = cache

    def allow_request(self, request, view) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey):
            return True
        self.cache_key = f"throttle_rate_{api_key.prefix}"
        now = time.time()
        history = [t for t in self.cache.get(self.cache_key, []) if t > now - self.duration_s]
        cost = _cost(request, view)
        if cost > api_key.rate_per_minute:
            raise TooManyImages(f"{cost} images in one request; this key may send at most "
                                f"{api_key.rate_per_minute} per minute.")
        excess = len(history) + cost - api_key.rate_per_minute
        if excess > 0:
            # The oldest `excess` images must leave the window; history is newest first.
            self.wait_s = self.duration_s - (now - history[-excess])
            return False
        history = [now] * cost + history
        self.cache.set(self.cache_key, history, self.duration_s)
        return True

    def wait(self) -> float:
        """Seconds until enough images have left the window for this request to fit."""
        return max(1.0, self.wait_s)


class DailyQuotaThrottle(BaseThrottle):
    """At most ``ApiKey.daily_quota`` images per UTC day (429 quota_exceeded).

    Usage is counted from the audit log (every image sent with the key today, except requests
    refused before any image was looked at: :data:`NOT_CHARGED`), which is exact across
    workers and survives restarts. Requests
    still in flight are not yet counted, so parallel requests can overshoot slightly.

    Raises:
        QuotaExceeded: with ``Retry-After`` = seconds until the next UTC midnight.
        TooManyImages: one request carries more images than the whole quota.
    """

    def allow_request(self, request, view) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey) or api_key.daily_quota is None:
            return True
        now = timezone.now().astimezone(dt.timezone.utc)
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        used = (OcrRequest.objects.filter(api_key=api_key, created__gte=midnight)
                .exclude(error_code__in=NOT_CHARGED).count())
        cost = _cost(request, view)
        if cost > api_key.daily_quota:
            raise TooManyImages(f"{cost} images in one request; this key's daily quota is "
                                f"{api_key.daily_quota}.")
        if used + cost > api_key.daily_quota:
            seconds_left = (midnight + dt.timedelta(days=1) - now).total_seconds()
            raise QuotaExceeded(
                f"The key's daily quota of {api_key.daily_quota} images is used up.",
                retry_after=max(1, int(seconds_left)))
        return True


class UnauthenticatedRateThrottle(SimpleRateThrottle):
    """At most ``OCR_UNAUTHENTICATED_RATE_PER_MINUTE`` requests without a valid key per client
    address (:func:`ocr_api.audit.client_ip`) in any 60-second window (429 rate_limited with
    ``Retry-After``); the view asks it only for such requests, so a valid key sent from the
    same address is never refused by it. DRF's sliding window, in the shared cache.
    """

    scope = "unauthenticated"

    def get_rate(self) -> str:
        return f"{settings.OCR_UNAUTHENTICATED_RATE_PER_MINUTE}/minute"

    def get_cache_key(self, request, view) -> str:
        return f"throttle_unauthenticated_{client_ip(request) or 'unknown'}"
