"""The plugin's HTTP side: one page image read by the gateway's ``/api/ocr``, and the languages
of its ``/api/models``, with the service's refusals mapped to OCRmyPDF's exceptions.

A refusal that says when to come back (429 rate/quota/key_busy, 503 overloaded or Triton
unavailable, 502 from the proxy while the gateway restarts, each with ``Retry-After``: the
README's error list) is waited out and the page sent again, up to
:attr:`GatewayOptions.max_wait <ocrmypdf_ocr_gateway.options.GatewayOptions.max_wait>` seconds
of waiting per page: OCRmyPDF's ``--jobs`` parallel pages meet the service's admission control
and are read later instead of failing. Anything else fails the page with the service's own error
code and message (its JSON error body, ``{"error": {"code", "message"}}``). A 504 is not sent
again: the page took the service's whole deadline once, and would again.
"""

from __future__ import annotations

import logging
import mimetypes
import os
import time
from functools import lru_cache
from pathlib import Path

import urllib3
from ocrmypdf.exceptions import BadArgsError, InputFileError, SubprocessOutputError

from .options import GatewayOptions

log = logging.getLogger(__name__)

#: Statuses whose ``Retry-After`` the plugin honours.
RETRIED_STATUSES = (429, 502, 503)
#: The least pause between two sends of a page, seconds (a ``Retry-After`` of 0 or a date
#: already past would otherwise send it again at once, without end).
MIN_PAUSE_S = 1.0
#: Connections kept to the service per process (OCRmyPDF's threads beyond it open their own).
POOL_CONNECTIONS = 16


class KeyRefused(BadArgsError):
    """The service refused the key (401, 403): a wrong, revoked or missing key."""


class PageRefused(InputFileError):
    """The service refused a page for what it is (4xx: too large, undecodable, too slow for
    its deadline...)."""


class ServiceFailed(SubprocessOutputError):
    """The service could not read a page: unreachable, a 5xx, or refusals that outlasted
    ``--gateway-max-wait``."""


class GatewayClient:
    """Requests to one gateway with one key.

    Args:
        options: the ``gateway`` namespace's values.
    """

    def __init__(self, options: GatewayOptions):
        self.url = options.url.rstrip("/")
        self.timeout_s, self.max_wait_s = options.timeout, options.max_wait
        self._headers = {"Authorization": f"Api-Key {options.key}"}
        # Connection failures are retried (nothing was read); a read that timed out is not.
        # OCRmyPDF's --jobs may be threads sharing this client: a connection each.
        self._http = urllib3.PoolManager(
            maxsize=POOL_CONNECTIONS,
            timeout=urllib3.Timeout(connect=10.0, read=options.timeout),
            retries=urllib3.Retry(connect=3, read=0, redirect=0, status=0, other=0,
                                  backoff_factor=0.5))

    def languages(self) -> dict[str, str]:
        """The service's languages, Tesseract's name (what ``-l`` takes: ``eng``,
        ``chi_sim``) to the service's code (ISO 639-1: ``en``, ``zh``), from ``/api/models``.

        Raises:
            KeyRefused, ServiceFailed: as :meth:`read_page`.
        """
        body = self._send("GET", "/api/models", "the models list").json()
        return {language["tesseract"]: language["code"] for language in body["languages"]}

    def read_page(self, image: Path, fields: dict[str, str], answer_format: str = "json") -> bytes:
        """One page image read by ``POST /api/ocr?format=<answer_format>``, sent as a multipart
        ``image`` with ``fields`` (``language``...); the answer's body.

        Raises:
            KeyRefused: 401 or 403.
            PageRefused: any other 4xx but a retried one.
            ServiceFailed: the service unreachable or silent past ``timeout`` seconds, a 5xx,
                or 429/502/503 refusals past ``max_wait`` seconds of waiting (or without
                ``Retry-After``).
        """
        data = image.read_bytes()
        content_type = mimetypes.guess_type(image.name)[0] or "application/octet-stream"
        upload = {"image": (image.name, data, content_type), **fields}
        return self._send("POST", f"/api/ocr?format={answer_format}", image.name,
                          fields=upload).data

    def _send(self, method: str, path: str, what: str, **request) -> urllib3.BaseHTTPResponse:
        waited = 0.0
        while True:
            try:
                response = self._http.request(method, self.url + path, headers=self._headers,
                                              **request)
            except urllib3.exceptions.ReadTimeoutError as exc:
                raise ServiceFailed(f"{what}: no answer from the OCR gateway at {self.url} "
                                    f"within {self.timeout_s:g} s (--gateway-timeout)") from exc
            except urllib3.exceptions.HTTPError as exc:
                raise ServiceFailed(f"The OCR gateway at {self.url} could not be reached for "
                                    f"{what}: {exc}") from exc
            if response.status == 200:
                return response
            code, message = _error(response)
            retry_after = response.headers.get("Retry-After")
            pause = _pause(retry_after) if response.status in RETRIED_STATUSES else None
            if pause is not None and waited + pause <= self.max_wait_s:
                log.info("%s: the OCR gateway said %s %s; sending again in %g s",
                         what, response.status, code, pause)
                time.sleep(pause)
                waited += pause
                continue
            said = f"{response.status} {code}: {message}"
            if response.status in (401, 403):
                raise KeyRefused(f"The OCR gateway at {self.url} refused the API key "
                                 f"(--gateway-key or $OCR_GATEWAY_KEY): {said}")
            if pause is not None:
                raise ServiceFailed(f"{what}: the OCR gateway refused it again after {waited:g} s "
                                    f"of waiting and asked for {pause:g} s more, past "
                                    f"--gateway-max-wait {self.max_wait_s:g}: {said}")
            if 400 <= response.status < 500:
                raise PageRefused(f"{what}: the OCR gateway refused it: {said}")
            raise ServiceFailed(f"{what}: the OCR gateway failed: {said}")


def _pause(retry_after: str | None) -> float | None:
    """Seconds to wait before sending again, from a ``Retry-After`` header (seconds or an
    HTTP date), at least :data:`MIN_PAUSE_S`; None without one, or with one that is neither."""
    if not retry_after:
        return None
    try:
        return max(urllib3.Retry().parse_retry_after(retry_after), MIN_PAUSE_S)
    except urllib3.exceptions.InvalidHeader:
        return None


def _error(response: urllib3.BaseHTTPResponse) -> tuple[str, str]:
    """The service's error code and message, from its JSON error body; the status's reason
    when the body is not one (a proxy's page, say)."""
    try:
        error = response.json()["error"]
        return str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        return "", response.reason or ""


def client_for(options: GatewayOptions) -> GatewayClient:
    """One client (one connection pool) per process and set of options: a worker process
    forked from the one that asked ``/api/models`` makes its own, never writing to a
    connection its parent holds open."""
    return _client(options, os.getpid())


@lru_cache(maxsize=4)
def _client(options: GatewayOptions, pid: int) -> GatewayClient:
    return GatewayClient(options)
