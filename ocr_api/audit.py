"""The audit log and the gateway's metrics of OCR requests: one
:class:`~ocr_api.models.OcrRequest` row per image, on success and on every refusal, for every
request that authenticated; requests refused before they authenticated are counted per client
address and minute instead (:class:`~ocr_api.models.RefusalCount`).

A view makes a :class:`RequestRecorder` when it starts handling a request, adds one
:class:`AuditRecord` per image as it learns about them, and calls
:meth:`RequestRecorder.finish` with the response, whatever the response is.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import time
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from . import metrics
from .models import ApiKey, OcrRequest, RefusalCount

logger = logging.getLogger(__name__)


@dataclass
class AuditRecord:
    """What a view learns about one image while it handles it; saved by :func:`write`."""

    request_id: str
    endpoint: str = "ocr"
    client_ip: str | None = None
    bytes_received: int = 0
    image_format: str = ""
    width: int | None = None
    height: int | None = None
    parameters: dict = field(default_factory=dict)
    http_status: int = 0
    error_code: str = ""
    page_count: int = 1
    box_count: int | None = None
    char_count: int | None = None
    total_ms: float | None = None
    inference_ms: float | None = None
    model_name: str = ""
    model_version: str = ""


class RequestRecorder:
    """Audit rows and metrics of one request to an OCR endpoint.

    Making one starts the clock and counts the request in ``ocr_requests_in_flight``;
    :meth:`finish` writes the rows, observes the metrics and counts it out.

    Args:
        request: the request (Django's or DRF's), after :class:`~ocr_api.middleware.RequestIdMiddleware`.
        endpoint: the endpoint's name in rows and metrics (``ocr``, ``ocr_batch``).

    Attributes:
        api_key: the key the request authenticated with; set by the view once known.
        user: the staff user whose session the request authenticated with (the demo page);
            set by the view once known.
        authenticated: the request authenticated (a key or a user); set by the view. Until
            then the request is counted (:func:`count_refusal`), not written row by row.
        records: one :class:`AuditRecord` per image, made by :meth:`new_record`.
    """

    def __init__(self, request, endpoint: str):
        self.request_id = request.request_id
        self.endpoint = endpoint
        self.client_ip = client_ip(request)
        self.api_key: ApiKey | None = None
        self.user = None
        self.authenticated = False
        self.records: list[AuditRecord] = []
        self._started = time.perf_counter()
        metrics.IN_FLIGHT.inc()

    def new_record(self) -> AuditRecord:
        """A record for the next image of this request."""
        record = AuditRecord(request_id=self.request_id, endpoint=self.endpoint,
                             client_ip=self.client_ip)
        self.records.append(record)
        return record

    def elapsed_ms(self) -> float:
        """Milliseconds since the request reached the view, to 0.1 ms."""
        return round((time.perf_counter() - self._started) * 1000.0, 1)

    def finish(self, status: int, error_code: str) -> None:
        """Write one row per image (one row when no image was looked at) and the metrics.

        Args:
            status, error_code: the response's; records without their own (a batch's
                per-image outcomes) take these.
        """
        metrics.IN_FLIGHT.dec()
        total_ms = self.elapsed_ms()
        for record in self.records or [self.new_record()]:
            if not record.http_status:
                record.http_status, record.error_code = status, error_code
            record.total_ms = total_ms
            if self.authenticated:
                write(record, self.api_key, self.user)
            else:
                count_refusal(record)
            metrics.observe_image(self.endpoint, record.http_status, record.error_code,
                                  record.inference_ms)
        metrics.REQUEST_SECONDS.labels(self.endpoint).observe(total_ms / 1000.0)


def write(record: AuditRecord, api_key: ApiKey | None, user=None) -> None:
    """Insert the row. A database failure is logged, never turned into a client error."""
    try:
        OcrRequest.objects.create(api_key=api_key, user=user, **asdict(record))
    except Exception:  # noqa: BLE001 - losing the answer would be worse than losing the row
        logger.exception("could not write the audit row for %s", record.request_id)


def count_refusal(record: AuditRecord) -> None:
    """Count a request refused before it authenticated in its address's row of this minute
    (made on the first one). A database failure is logged, never turned into a client error."""
    key = {"minute": timezone.now().replace(second=0, microsecond=0),
           "client_ip": record.client_ip or "", "endpoint": record.endpoint,
           "http_status": record.http_status, "error_code": record.error_code}
    rows = RefusalCount.objects.filter(**key)
    try:
        if rows.update(count=F("count") + 1):
            return
        try:
            with transaction.atomic():
                RefusalCount.objects.create(count=1, **key)
        except IntegrityError:  # another worker made the row in between
            rows.update(count=F("count") + 1)
    except Exception:  # noqa: BLE001 - like write(): the answer matters more than the count
        logger.exception("could not count the refusal of %s", record.request_id)


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> list:
    """The trusted proxies as networks, parsed once per setting value."""
    return [ipaddress.ip_network(entry, strict=False) for entry in entries]


def is_trusted_proxy(address: str | None) -> bool:
    """``address`` is one of ``OCR_TRUSTED_PROXIES`` (addresses or CIDR networks)."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in network for network in _networks(tuple(settings.OCR_TRUSTED_PROXIES)))


def client_ip(request) -> str | None:
    """The client's IP address.

    ``REMOTE_ADDR`` unless it is a trusted proxy (``OCR_TRUSTED_PROXIES``, addresses or CIDR
    networks): then the right-most ``X-Forwarded-For`` entry that is not a trusted proxy.
    """
    remote = request.META.get("REMOTE_ADDR") or None
    is_trusted = is_trusted_proxy

    if remote is None or not is_trusted(remote):
        return remote
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for address in reversed([a for a in forwarded if a]):
        if not is_trusted(address):
            try:
                return str(ipaddress.ip_address(address))
            except ValueError:
                return remote
    return remote
