"""API keys and the audit log."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from rest_framework_api_key.models import AbstractAPIKey


class ApiKey(AbstractAPIKey):
    """A client's API key, hashed at rest (djangorestframework-api-key).

    The key itself is shown once, when it is created; only its prefix and hash are stored.
    ``revoked`` and ``expiry_date`` come from the library.
    """

    owner = models.CharField(max_length=150, blank=True,
                             help_text="Who uses the key: a team, an app, a customer.")
    rate_per_minute = models.PositiveIntegerField(
        default=60, validators=[MinValueValidator(1)],
        help_text="Images per minute; more answers 429 rate_limited.")
    daily_quota = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Images per UTC day; empty = unlimited. More answers 429 quota_exceeded.")

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"


class OcrRequest(models.Model):
    """One audited OCR request (one row per image or document, with its page count), written on
    success and on every failure.

    Images and the text read in them are never stored (text is often personal data: ID cards,
    receipts): only ``char_count``, how many characters were read. Times are milliseconds;
    ``bytes_received`` is the image's size. Who sent it: ``api_key``, or ``user`` for a staff
    session (the demo page).
    """

    request_id = models.CharField(max_length=64, db_index=True)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="requests")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="ocr_requests",
                             help_text="The staff user whose session sent it (the demo page).")
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    endpoint = models.CharField(max_length=32, default="ocr")
    bytes_received = models.PositiveBigIntegerField(default=0)
    image_format = models.CharField(max_length=16, blank=True)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    http_status = models.PositiveSmallIntegerField(db_index=True)
    error_code = models.CharField(max_length=64, blank=True, db_index=True)
    page_count = models.PositiveIntegerField(
        default=1, help_text="Pages of the upload (1 for an image): what the quota counts.")
    box_count = models.PositiveIntegerField(null=True, blank=True)
    char_count = models.PositiveIntegerField(
        null=True, blank=True, help_text="Characters read in the image (never the text).")
    total_ms = models.FloatField(null=True, blank=True)
    inference_ms = models.FloatField(null=True, blank=True)
    model_name = models.CharField(max_length=64, blank=True)
    model_version = models.CharField(max_length=16, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "OCR request"
        indexes = [models.Index(fields=["api_key", "created"])]

    def __str__(self):
        return f"{self.request_id} {self.http_status} {self.error_code or 'ok'}"


class RefusalCount(models.Model):
    """Requests refused before they authenticated (no API key, an unknown, revoked or expired
    one, or the per-address throttle of such requests), counted per client address, minute,
    endpoint, status and code rather than written one audit row each.

    Anyone can send those without limit, so one row each would let a loop of junk keys grow
    the table (and the disk) as fast as the gateway answers; counted, a flood adds at most a
    few rows per address and minute, and still says who sent what, when and how often.
    Requests that authenticated keep their row each in :class:`OcrRequest`.
    """

    minute = models.DateTimeField(db_index=True, help_text="Start of the minute (UTC).")
    client_ip = models.CharField(max_length=45, blank=True,
                                 help_text="The client's address ('' when unknown).")
    endpoint = models.CharField(max_length=32)
    http_status = models.PositiveSmallIntegerField()
    error_code = models.CharField(max_length=64, blank=True)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-minute"]
        verbose_name = "refusal before authentication (per minute)"
        verbose_name_plural = "refusals before authentication (per minute)"
        constraints = [models.UniqueConstraint(
            fields=["minute", "client_ip", "endpoint", "http_status", "error_code"],
            name="refusal_count_unique_minute")]

    def __str__(self):
        return f"{self.minute:%Y-%m-%d %H:%M} {self.client_ip} {self.error_code} x{self.count}"


class RateWindow(models.Model):
    """The last minute of one throttled sender: how many images (or requests) it sent in each
    second, the sliding window of a per-minute limit (:mod:`ocr_api.throttling`).

    Shared by every gunicorn worker and replica through the database, and changed only under
    a lock on the row (``SELECT ... FOR UPDATE``; SQLite's write lock), so concurrent requests
    of one sender are counted one after the other and never overshoot the limit. One row per
    sender, at most 60 entries in ``seconds``.
    """

    sender = models.CharField(max_length=80, unique=True,
                              help_text="'key:<key prefix>' or 'address:<client address>'.")
    seconds = models.JSONField(default=dict, blank=True,
                               help_text='{"<unix second>": count} of the last 60 seconds.')
    updated = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        verbose_name = "rate window"

    def __str__(self):
        return f"{self.sender}: {sum(self.seconds.values())} in the last minute"


class QuotaUsage(models.Model):
    """Images an API key has used of its daily quota on one UTC day
    (:class:`~ocr_api.throttling.DailyQuotaThrottle`).

    A request reserves its images with one conditional ``UPDATE`` (atomic: concurrent
    requests cannot both take the last image) before it is processed; when it is answered,
    the images that the audit log does not charge (refused before any image was looked at)
    are given back, so the count always ends equal to the day's charged audit rows.
    """

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="quota_usage")
    day = models.DateField(help_text="The UTC day.")
    images = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "daily quota usage"
        verbose_name_plural = "daily quota usage"
        constraints = (models.UniqueConstraint(fields=["api_key", "day"],
                                               name="quota_usage_unique_day"),)

    def __str__(self):
        return f"{self.api_key_id} {self.day}: {self.images}"
