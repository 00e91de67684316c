"""Where a job's webhook may be sent: the operator's switches, read once from settings.

The defaults are the production ones (OWASP SSRF Prevention Cheat Sheet, "Case 2": the
application may call any *external* address, so internal ones are refused and the scheme is
restricted): HTTPS only, no loopback or private addresses, the system's trust store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable

#: Settings read by :meth:`WebhookPolicy.from_settings` (Django settings or any object with
#: these attributes).
SETTING_ALLOW_PRIVATE = "OCR_WEBHOOK_ALLOW_PRIVATE"
SETTING_HTTP_HOSTS = "OCR_WEBHOOK_HTTP_HOSTS"
SETTING_CA_FILE = "OCR_WEBHOOK_CA_FILE"


def normalize_host(host: str) -> str:
    """A host name as the rules compare it: lower case, without a trailing dot, IPv6 literals
    without brackets."""
    return host.strip().strip("[]").rstrip(".").lower()


@dataclass(frozen=True)
class WebhookPolicy:
    """The operator's choices for webhook targets.

    Attributes:
        allow_private: also allow loopback, private (RFC 1918), shared/CGNAT (RFC 6598),
            unique-local IPv6 (RFC 4193) and other non-global special-purpose addresses —
            for development and for receivers on the operator's own network. Never allowed,
            whatever this says: cloud metadata addresses and names, link-local
            (169.254/16, fe80::/10, where metadata services live), multicast, reserved and
            unspecified addresses.
        http_hosts: host names (or IP literals) that may be called over plain ``http``;
            every other host needs ``https``. Compared case-insensitively, without port.
            The address rules still apply to these hosts.
        ca_file: PEM bundle of the CAs trusted for ``https`` receivers instead of the
            system trust store (a private CA; the tests' self-signed receiver). ``None``:
            the system trust store.
    """

    allow_private: bool = False
    http_hosts: frozenset[str] = field(default_factory=frozenset)
    ca_file: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "http_hosts",
                           frozenset(normalize_host(h) for h in self.http_hosts if h.strip()))

    def allows_http(self, host: str) -> bool:
        """Whether ``host`` may be called over plain http."""
        return normalize_host(host) in self.http_hosts

    @classmethod
    def from_settings(cls, settings: Any) -> WebhookPolicy:
        """The policy from ``OCR_WEBHOOK_ALLOW_PRIVATE`` (bool, default False),
        ``OCR_WEBHOOK_HTTP_HOSTS`` (a list, or a comma-separated string; default none) and
        ``OCR_WEBHOOK_CA_FILE`` (path or empty; default the system trust store)."""
        hosts: str | Iterable[str] = getattr(settings, SETTING_HTTP_HOSTS, ()) or ()
        if isinstance(hosts, str):
            hosts = hosts.split(",")
        return cls(allow_private=bool(getattr(settings, SETTING_ALLOW_PRIVATE, False)),
                   http_hosts=frozenset(hosts),
                   ca_file=getattr(settings, SETTING_CA_FILE, None) or None)
