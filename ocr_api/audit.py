"""Audit log writes: one :class:`~ocr_api.models.OcrRequest` row per OCR request."""

from __future__ import annotations

import functools
import ipaddress
import logging
from dataclasses import asdict, dataclass, field

from django.conf import settings

from .models import ApiKey, OcrRequest

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
    box_count: int | None = None
    total_ms: float | None = None
    inference_ms: float | None = None
    model_name: str = ""
    model_version: str = ""


def write(record: AuditRecord, api_key: ApiKey | None) -> None:
    """Insert the row. A database failure is logged, never turned into a client error."""
    try:
        OcrRequest.objects.create(api_key=api_key, **asdict(record))
    except Exception:  # noqa: BLE001 - losing the answer would be worse than losing the row
        logger.exception("could not write the audit row for %s", record.request_id)


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> list:
    """The trusted proxies as networks, parsed once per setting value."""
    return [ipaddress.ip_network(entry, strict=False) for entry in entries]


def client_ip(request) -> str | None:
    """The client's IP address.

    ``REMOTE_ADDR`` unless it is a trusted proxy (``OCR_TRUSTED_PROXIES``, addresses or CIDR
    networks): then the right-most ``X-Forwarded-For`` entry that is not a trusted proxy.
    """
    trusted = _networks(tuple(settings.OCR_TRUSTED_PROXIES))
    remote = request.META.get("REMOTE_ADDR") or None

    def is_trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in trusted)

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
