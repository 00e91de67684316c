"""A job's ``callback_url``: checked when the job is created (so the API can answer 400 on
field ``callback_url``) and again, with one DNS resolution, before every delivery attempt.

Rules (OWASP SSRF Prevention Cheat Sheet; WHATWG URL Standard for host parsing; Standard
Webhooks "Enforcing HTTPS"):

- ``https`` only; ``http`` only for the hosts the policy lists.
- No user info (``user:pass@``): it hides the real host from readers and some parsers.
- ASCII only, no spaces, control characters or backslashes (parsers disagree on those);
  international host names are given in punycode (``xn--``).
- The host is a DNS name or a canonical IP literal. A host whose last label is a number
  (``2130706433``, ``0x7f.1``, ``127.1``, ``010.0.0.1``) is refused: browsers and
  ``inet_aton`` read those as IPv4 addresses in forms that dodge naive checks.
- Any port 1-65535 is allowed: receivers commonly listen on 8443 and the like, and the
  protection is by address, not by port (the address rules below apply to every port).
- Metadata host names and ``localhost`` are refused by name; an IP literal is checked
  at once; a DNS name is resolved once (:func:`resolve_callback_url`) and **every** address it
  resolves to must pass :mod:`ocr_jobs.webhooks.addresses` — the delivery then connects to one
  of exactly those addresses, never resolving again.
- The fragment is never sent; path and query are sent as given.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import NoReturn
from urllib.parse import urlsplit

from .addresses import METADATA_HOSTS, REASON_TEXT, IPAddress, refusal_reason
from .policy import WebhookPolicy, normalize_host

#: Longest callback URL accepted, in characters.
MAX_URL_LENGTH = 2048

_DEFAULT_PORTS = {"https": 443, "http": 80}
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class CallbackUrlError(ValueError):
    """A callback URL that cannot be used.

    Attributes:
        code: stable, machine-readable: ``callback_url_refused`` (invalid, or against the
            policy: permanent) or ``callback_url_unresolvable`` (DNS gave no answer: may
            pass later).
        reason: which rule, e.g. ``scheme``, ``userinfo``, ``ip_form``, ``loopback``,
            ``private``, ``metadata`` (see :data:`ocr_jobs.webhooks.addresses.REASON_TEXT`).
        message: for humans (safe to show the client; never the URL's path or query).
        field: the request field at fault, always ``callback_url``.
        permanent: whether trying again later cannot help.
    """

    code = "callback_url_refused"
    permanent = True
    field = "callback_url"

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


class CallbackUrlRefused(CallbackUrlError):
    """The URL is malformed or breaks the policy (permanent)."""


class CallbackUrlUnresolvable(CallbackUrlError):
    """The host name has no address now (DNS failure): retryable at delivery time."""

    code = "callback_url_unresolvable"
    permanent = False


@dataclass(frozen=True)
class CallbackUrl:
    """A callback URL that passed :func:`validate_callback_url`.

    Attributes:
        scheme: ``https`` or ``http``.
        host: the normalised host (lower case, no trailing dot, IPv6 without brackets).
        port: the TCP port (the scheme's default when the URL names none).
        ip: the address when the host is an IP literal, else ``None`` (a DNS name).
        target: what goes on the request line: path (``/`` if empty) and query.
        host_header: the ``Host`` header value (brackets for IPv6, port if not default).
    """

    scheme: str
    host: str
    port: int
    ip: IPAddress | None
    target: str
    host_header: str

    @property
    def origin(self) -> str:
        """``scheme://host[:port]``: what logs may show (never the path or query, which may
        carry the receiver's tokens)."""
        return f"{self.scheme}://{self.host_header}"


@dataclass(frozen=True)
class ResolvedCallbackUrl:
    """A :class:`CallbackUrl` with the addresses its host resolved to, all allowed, in the
    resolver's order (duplicates dropped). Deliveries connect only to these."""

    url: CallbackUrl
    addresses: tuple[IPAddress, ...]


def _refuse(reason: str, message: str) -> NoReturn:
    raise CallbackUrlRefused(reason, message)


def _check_address(ip: IPAddress, policy: WebhookPolicy, what: str) -> None:
    reason = refusal_reason(ip, allow_private=policy.allow_private)
    if reason is not None:
        _refuse(reason, f"callback_url {what} {REASON_TEXT[reason]}, which is not allowed.")


def validate_callback_url(url: str, policy: WebhookPolicy) -> CallbackUrl:
    """Check ``url`` against the rules in this module's docstring, without any network access.

    Args:
        url: the client's ``callback_url``.
        policy: the operator's :class:`~ocr_jobs.webhooks.policy.WebhookPolicy`.

    Returns:
        The parsed :class:`CallbackUrl` (an IP literal already checked; a DNS name still to
        be resolved by :func:`resolve_callback_url`).

    Raises:
        CallbackUrlRefused: code ``callback_url_refused``; ``reason`` names the rule.
    """
    if not isinstance(url, str) or not url:
        _refuse("syntax", "callback_url must be a non-empty URL.")
    if len(url) > MAX_URL_LENGTH:
        _refuse("syntax", f"callback_url is longer than {MAX_URL_LENGTH} characters.")
    if not url.isascii() or any(c <= " " or c in "\x7f\\" for c in url):
        _refuse("syntax", "callback_url must be ASCII without spaces, control characters or "
                          "backslashes (use punycode for international host names and "
                          "percent-encoding in the path).")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        _refuse("syntax", "callback_url is not a valid URL (check the host and port).")
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        _refuse("scheme", "callback_url must be an https URL.")
    if "@" in parts.netloc:
        _refuse("userinfo", "callback_url must not contain a user name or password.")
    raw_host = parts.hostname or ""
    if not raw_host:
        _refuse("syntax", "callback_url has no host.")
    if port == 0:
        _refuse("port", "callback_url has port 0.")
    host = normalize_host(raw_host)
    if scheme == "http" and not policy.allows_http(host):
        _refuse("scheme", "callback_url must be an https URL.")
    port = port or _DEFAULT_PORTS[scheme]

    ip: IPAddress | None = None
    if "%" in host:
        _refuse("syntax", "callback_url's host must not carry an IPv6 zone id.")
    if parts.netloc.startswith("["):
        try:
            ip = ipaddress.IPv6Address(host)
        except ValueError:
            _refuse("syntax", "callback_url has an invalid IPv6 address.")
    else:
        try:
            ip = ipaddress.IPv4Address(host)  # strict dotted quad, no leading zeros
        except ValueError:
            labels = host.split(".")
            if _NUMERIC_LABEL.match(labels[-1]):
                _refuse("ip_form", "callback_url's host looks like an IP address in a "
                                   "non-standard form; write it as a.b.c.d.")
            if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
                _refuse("syntax", "callback_url's host is not a valid host name.")

    if ip is None:
        if host in METADATA_HOSTS:
            _refuse("metadata", "callback_url points at a cloud metadata service, which is "
                                "not allowed.")
        if (host == "localhost" or host.endswith(".localhost")) and not policy.allow_private:
            _refuse("loopback", "callback_url points at localhost, which is not allowed.")
    else:
        _check_address(ip, policy, "is")

    host_text = f"[{ip.compressed}]" if ip is not None and ip.version == 6 else host
    host_header = host_text if port == _DEFAULT_PORTS[scheme] else f"{host_text}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return CallbackUrl(scheme=scheme, host=ip.compressed if ip else host, port=port, ip=ip,
                       target=target, host_header=host_header)


def resolve_callback_url(url: CallbackUrl, policy: WebhookPolicy) -> ResolvedCallbackUrl:
    """Resolve the host once and check every address it resolves to.

    An IP literal is not looked up. A DNS name is resolved with one
    :func:`socket.getaddrinfo` call (the system resolver and its own timeouts); if **any**
    answer is refused the URL is refused — a name that answers one public and one private
    address could be pointed at the private one on the next lookup (DNS rebinding), which is
    also why the caller must connect to one of the returned addresses and never resolve again.

    Raises:
        CallbackUrlRefused: an address is not allowed (permanent).
        CallbackUrlUnresolvable: no answer (``socket.gaierror``, no addresses; retryable).
    """
    if url.ip is not None:
        _check_address(url.ip, policy, "is")
        return ResolvedCallbackUrl(url, (url.ip,))
    try:
        answers = socket.getaddrinfo(url.host, url.port, type=socket.SOCK_STREAM,
                                     proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as error:
        raise CallbackUrlUnresolvable(
            "dns", f"callback_url's host could not be resolved ({error}).") from None
    addresses: list[IPAddress] = []
    for family, _type, _proto, _canon, sockaddr in answers:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        try:
            ip = ipaddress.ip_address(sockaddr[0])
        except ValueError:  # a scoped IPv6 address ("fe80::1%eth0"): link-local
            _refuse("link_local", "callback_url's host resolves to a link-local address, "
                                  "which is not allowed.")
        _check_address(ip, policy, "resolves to")
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise CallbackUrlUnresolvable("dns", "callback_url's host has no IP address.")
    return ResolvedCallbackUrl(url, tuple(addresses))
