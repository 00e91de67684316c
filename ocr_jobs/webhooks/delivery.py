"""One webhook delivery attempt: check the URL, resolve it once, connect to exactly a checked
address, POST the signed body, and say what happened.

How the connection is pinned: the host is resolved once (:func:`~ocr_jobs.webhooks.
callback_url.resolve_callback_url`, which refuses the URL if *any* answer is refused) and
urllib3's connection pool is opened on the checked **IP address** itself, with
``server_hostname`` set to the URL's host name — urllib3's documented "custom SNI" mechanism:
TLS sends that name as SNI and verifies the certificate against it, the request carries it as
``Host``, and no second DNS query happens (urllib3 is handed a numeric address), so a
rebinding DNS server cannot swap the address between check and connect (OWASP SSRF
Prevention Cheat Sheet, "DNS pinning"). When connecting to one checked address fails, the
next address of the same answer is tried, within the attempt's time.

Also (OWASP SSRF cheat sheet; Standard Webhooks 1.0.0 "Delivery success and failure"):
redirects are never followed (a 3xx is a failed attempt); ``2xx`` is success; ``410 Gone``
means the receiver wants no more (permanent); every other answer, a timeout or a broken
connection is retryable (``Retry-After`` is passed on). The response body is never read.
No proxy from the environment is used (urllib3's pools ignore ``HTTPS_PROXY``), since a
proxy would resolve the name again. The logs name the message id, the URL's origin and the
address — never the payload, the secret, or the URL's path and query.
"""

from __future__ import annotations

import enum
import logging
import ssl
import time
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Any
from collections.abc import Callable

import urllib3
from urllib3.exceptions import (ConnectTimeoutError, HTTPError, NewConnectionError,
                                ReadTimeoutError, SSLError)

from .backoff import MAX_RETRY_AFTER_S
from .callback_url import (CallbackUrl, CallbackUrlError, resolve_callback_url,
                           validate_callback_url)
from .policy import WebhookPolicy
from .signing import encode_payload, signed_headers

logger = logging.getLogger(__name__)

#: Longest wait for the TCP (and TLS) connection to one address, in seconds.
CONNECT_TIMEOUT_S = 3.0
#: Default limit of one whole attempt (connect, send, wait for the status line), in seconds.
#: Standard Webhooks suggests 15-30 s so slow receivers can answer; the issue asks for short
#: timeouts (a hanging receiver holds a worker); receivers should answer first, work after.
DEFAULT_ATTEMPT_TIMEOUT_S = 10.0
USER_AGENT = "ocr-gateway-webhooks/1"


class Outcome(enum.Enum):
    """What the task queue should do next."""

    DELIVERED = "delivered"   #: 2xx: done.
    RETRY = "retry"           #: failed; try again after ``next_delay_s``.
    GIVE_UP = "give_up"       #: refused URL or 410 Gone: never try again.


@dataclass(frozen=True)
class DeliveryResult:
    """The result of one attempt.

    Attributes:
        outcome: :class:`Outcome`.
        status_code: the receiver's HTTP status, if it answered.
        error: ``None`` when delivered, else a stable code: ``callback_url_refused``,
            ``callback_url_unresolvable``, ``redirect``, ``gone``, ``http_status``,
            ``timeout``, ``connect_failed``, ``tls_failed``, ``connection_failed``.
        detail: a short human explanation (no payload, no secret, no URL path or query).
        address: the IP address connected to (the last one tried), if any.
        retry_after_s: the receiver's ``Retry-After``, in seconds, if it sent one.
        elapsed_s: the attempt's wall time, in seconds.
    """

    outcome: Outcome
    status_code: int | None = None
    error: str | None = None
    detail: str = ""
    address: str | None = None
    retry_after_s: float | None = None
    elapsed_s: float = 0.0

    @property
    def delivered(self) -> bool:
        return self.outcome is Outcome.DELIVERED

    @property
    def retryable(self) -> bool:
        return self.outcome is Outcome.RETRY

    @property
    def permanent(self) -> bool:
        return self.outcome is Outcome.GIVE_UP


def _retry_after_s(value: str | None) -> float | None:
    """``Retry-After`` (RFC 9110 §10.2.3: seconds or an HTTP date) in seconds from now,
    clipped to [0, MAX_RETRY_AFTER_S]; ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(int(value))
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _pool(url: CallbackUrl, address: str, timeout: urllib3.Timeout, policy: WebhookPolicy,
          ssl_context: ssl.SSLContext | None) -> urllib3.HTTPConnectionPool:
    common: dict[str, Any] = dict(port=url.port, timeout=timeout, retries=False, maxsize=1)
    if url.scheme == "http":
        return urllib3.HTTPConnectionPool(address, **common)
    return urllib3.HTTPSConnectionPool(
        address, **common, server_hostname=url.host, cert_reqs="CERT_REQUIRED",
        ca_certs=policy.ca_file, ssl_context=ssl_context)


def _status_result(status: int, headers, address: str) -> DeliveryResult:
    if 200 <= status < 300:
        return DeliveryResult(Outcome.DELIVERED, status, None, f"receiver answered {status}",
                              address)
    retry_after = _retry_after_s(headers.get("Retry-After"))
    if 300 <= status < 400:
        return DeliveryResult(Outcome.RETRY, status, "redirect",
                              f"receiver answered {status}; redirects are not followed "
                              "(update the callback URL)", address, retry_after)
    if status == 410:
        return DeliveryResult(Outcome.GIVE_UP, status, "gone",
                              "receiver answered 410 Gone: it wants no more webhooks", address)
    return DeliveryResult(Outcome.RETRY, status, "http_status", f"receiver answered {status}",
                          address, retry_after)


def _error_result(error: Exception, address: str) -> DeliveryResult:
    name = type(error).__name__
    if isinstance(error, NewConnectionError):
        code, text = "connect_failed", "could not connect"
    elif isinstance(error, (ConnectTimeoutError, ReadTimeoutError, TimeoutError)):
        code, text = "timeout", "timed out"
    elif isinstance(error, SSLError):
        code, text = "tls_failed", "TLS handshake or certificate verification failed"
    else:
        code, text = "connection_failed", "the connection failed"
    reason = getattr(error, "reason", None) or error
    detail = f"{text} ({name}: {str(reason)[:200]})"
    return DeliveryResult(Outcome.RETRY, None, code, detail, address)


def _attempt(url: CallbackUrl, addresses, body: bytes, headers: dict[str, str],
             policy: WebhookPolicy, deadline: float,
             ssl_context: ssl.SSLContext | None) -> DeliveryResult:
    result = DeliveryResult(Outcome.RETRY, None, "timeout", "no time left to connect")
    for ip in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        address = ip.compressed
        timeout = urllib3.Timeout(connect=min(CONNECT_TIMEOUT_S, remaining), read=remaining,
                                  total=remaining)
        pool = _pool(url, address, timeout, policy, ssl_context)
        try:
            response = pool.urlopen("POST", url.target, body=body, headers=headers,
                                    redirect=False, retries=False, assert_same_host=False,
                                    preload_content=False, release_conn=False)
            try:
                return _status_result(response.status, response.headers, address)
            finally:
                response.close()  # the body is never read
        except ConnectTimeoutError as error:  # NewConnectionError included: next address
            result = _error_result(error, address)
        except (HTTPError, OSError) as error:
            return _error_result(error, address)
        finally:
            pool.close()
    return result


def deliver(url: str, payload: dict[str, Any], secret: str, message_id: str,
            policy: WebhookPolicy, attempt_timeout_s: float = DEFAULT_ATTEMPT_TIMEOUT_S, *,
            ssl_context: ssl.SSLContext | None = None,
            clock: Callable[[], float] = time.time) -> DeliveryResult:
    """Make ONE delivery attempt of ``payload`` to ``url``, signed Standard Webhooks' way.

    The URL is checked again (the policy may have changed since the job was created) and
    resolved once; see this module's docstring for the connection rules. Retrying is the
    caller's: on :attr:`Outcome.RETRY` wait :func:`~ocr_jobs.webhooks.backoff.next_delay_s`
    and call again with the **same** ``message_id`` (the body is re-signed with the new
    attempt's timestamp, as the spec asks).

    Args:
        url: the job's ``callback_url``.
        payload: the event, JSON-serialisable (sent as minified UTF-8 JSON).
        secret: the key's ``whsec_…`` signing secret.
        message_id: the event's ``webhook-id``, the same on every retry.
        policy: the operator's :class:`~ocr_jobs.webhooks.policy.WebhookPolicy`.
        attempt_timeout_s: limit of the attempt once the name is resolved (connect, send,
            status line), in seconds; each socket operation is bounded by what is left.
            The DNS lookup is bounded by the system resolver's own timeouts.
        ssl_context: TLS settings to use instead of urllib3's defaults (certificate checks
            stay on: ``CERT_REQUIRED`` is enforced). CAs come from ``policy.ca_file`` when
            set, else the system trust store.
        clock: Unix time in seconds, for ``webhook-timestamp`` (tests).

    Returns:
        :class:`DeliveryResult`; SSRF refusals are :attr:`Outcome.GIVE_UP`.

    Raises:
        ValueError: a malformed ``secret`` or ``message_id``, or a NaN/infinity in the
            payload (caller bugs, not delivery failures).
        TypeError: a payload that is not JSON-serialisable.
    """
    start = time.monotonic()
    body_text = encode_payload(payload)
    headers = signed_headers(secret, message_id, int(clock()), body_text)

    def done(result: DeliveryResult, origin: str) -> DeliveryResult:
        result = replace(result, elapsed_s=time.monotonic() - start)
        level = logging.INFO if result.delivered else logging.WARNING
        logger.log(level, "webhook %s to %s (address %s): %s, status %s, %s in %.2f s",
                   message_id, origin, result.address, result.outcome.value,
                   result.status_code, result.error or "ok", result.elapsed_s)
        return result

    try:
        checked = validate_callback_url(url, policy)
    except CallbackUrlError as error:
        return done(DeliveryResult(Outcome.GIVE_UP, None, error.code, error.message),
                    "(refused URL)")
    try:
        resolved = resolve_callback_url(checked, policy)
    except CallbackUrlError as error:
        outcome = Outcome.GIVE_UP if error.permanent else Outcome.RETRY
        return done(DeliveryResult(outcome, None, error.code, error.message), checked.origin)

    headers.update({"Host": checked.host_header, "Content-Type": "application/json",
                    "User-Agent": USER_AGENT})
    deadline = time.monotonic() + attempt_timeout_s
    result = _attempt(checked, resolved.addresses, body_text.encode("utf-8"), headers, policy,
                      deadline, ssl_context)
    return done(result, checked.origin)
