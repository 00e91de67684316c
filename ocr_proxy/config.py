"""The buffering proxy's nginx configuration, written from the gateway's own settings.

gunicorn's gthread workers give a connection one of their few threads while they read its
request, so a handful of clients that send their headers or body slowly stop the gateway
(gunicorn's documentation asks for a buffering proxy in front for this reason). nginx reads
every request whole first, in its event loop, and only then passes it to gunicorn over
loopback or the container network. What the configuration written here does:

- time limits on reading headers (in total) and bodies (between two reads), and a cap on
  the connections of one client address (429 with ``Retry-After``, JSON);
- chunked bodies (``Transfer-Encoding: chunked``) are read up to the limit and sent on with a
  ``Content-Length``, so Django reads them like any other;
- a body over the limit (``OCR_MAX_UPLOAD_BYTES`` on ``/api/ocr``,
  ``OCR_BATCH_MAX_UPLOAD_BYTES`` on ``/api/ocr/batch``, ``OCR_JOB_MAX_BYTES`` on ``/api/jobs``,
  its base64 (4/3) on the Cloud Vision routes ``/v1/images:annotate`` and ``files:annotate``,
  each plus multipart framing, each in a location of its own; 1 MiB anywhere else) is refused as soon as the limit is crossed, by its ``Content-Length`` or
  while reading chunks, without storing more: the refusal goes to the gateway as a body-less
  request with :data:`~ocr_contract.limits.BODY_OVER_LIMIT_HEADER`, which answers its JSON 413
  and writes the audit row;
- lingering close: after an answer given before the body was read, nginx reads and discards
  what the client still sends (up to 30 s) before closing, so every client (``urllib``, ``requests``, curl) reads the answer instead
  of a connection reset;
- nginx's own refusals (a malformed request, headers or URL too long, an unknown
  ``Transfer-Encoding``, too many connections, the gateway down or too slow:
  :data:`PROXY_REFUSALS`) answer the API's JSON error shape, with nginx's ``$request_id``,
  which is also passed to gunicorn (``X-Request-ID``) as the id of every request it forwards;
  gunicorn's own header limits sit above nginx's (``deploy/gunicorn.conf.py``), so nginx
  always answers first;
- a POST is never sent twice: nginx passes a request to the next upstream only on an error
  before anything was sent, and never a non-idempotent one
  (``proxy_next_upstream error timeout``, without ``non_idempotent``); gunicorn reads and
  drops what it did not read of a refused body (``gateway.unread_body``), so a connection
  nginx reuses is never one gunicorn is closing, and gunicorn keeps idle connections longer
  (``GUNICORN_KEEPALIVE``) than nginx does (:data:`UPSTREAM_KEEPALIVE_S`).

docker compose runs ``python -m ocr_proxy`` once to write :func:`server_config` for the nginx
container; ``make serve``, the benchmarks and the tests run Debian's nginx with it
(:class:`ocr_embedded.proxy.BufferingProxy`). Kubernetes has ingress-nginx in front instead.
No Django here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ocr_contract import limits
from ocr_contract.errors import ERROR_CODES
from ocr_contract.settings import TRITON_TIMEOUT_S, Setting


#: nginx's buffers for a request's headers (``large_client_header_buffers``): the request line
#: and each header line must fit in one, all headers together in all of them.
HEADER_BUFFERS = 4
HEADER_BUFFER_BYTES = 8192
#: Seconds nginx keeps an idle connection to gunicorn for reuse; below gunicorn's keep-alive
#: (``GUNICORN_KEEPALIVE``), so gunicorn never closes a connection nginx is about to reuse.
UPSTREAM_KEEPALIVE_S = 30
#: Where nginx's own refusals are answered (internal locations, never reachable from outside).
REFUSAL_PATH = "/.proxy-refusal/"
#: The request-id header nginx sets (``$request_id``, 32 hex digits) on every request it passes.
REQUEST_ID_HEADER = "X-Request-ID"


@dataclass(frozen=True)
class ProxyRefusal:
    """An answer nginx gives itself, in the API's JSON error shape.

    Attributes:
        nginx_status: the status nginx refuses with (494: a header too large).
        code: the error code of :data:`~ocr_contract.errors.ERROR_CODES`; its status is the
            one answered.
        message: what to do; ``{...}`` fields are filled from :class:`ProxySettings` and the
            header limits.
        retry_after_s: ``Retry-After`` in seconds, if any.
    """

    nginx_status: int
    code: str
    message: str
    retry_after_s: int | None = None

    @property
    def status(self) -> int:
        return ERROR_CODES[self.code]


#: Every refusal nginx answers itself.
PROXY_REFUSALS = (
    ProxyRefusal(400, "malformed_request",
                 "The request is not valid HTTP (its request line, a header, or the framing "
                 "of its body): send a well-formed HTTP/1.1 request."),
    ProxyRefusal(408, "request_timeout",
                 "The request did not arrive in time: send all headers within "
                 "{header_timeout_s} s and the body without pausing longer than "
                 "{body_timeout_s} s."),
    ProxyRefusal(413, "payload_too_large",
                 "The body is larger than this URL takes (1 MiB): send images to POST "
                 "/api/ocr or POST /api/ocr/batch, documents to POST /api/jobs."),
    ProxyRefusal(414, "uri_too_long",
                 "The URL is longer than {header_buffer_kib} KiB: send long parameters as "
                 "multipart form fields instead."),
    ProxyRefusal(494, "headers_too_large",
                 "A request header is longer than {header_buffer_kib} KiB, the headers "
                 "together are longer than {headers_kib} KiB, or there are more than 1000: "
                 "send fewer and shorter headers (cookies, Authorization)."),
    ProxyRefusal(429, "rate_limited",
                 "Too many requests in progress from this address (at most "
                 "{connections_per_address}): wait for one to finish.", retry_after_s=1),
    ProxyRefusal(501, "unsupported_transfer_encoding",
                 "The Transfer-Encoding is not supported: send the body with a "
                 "Content-Length, or as Transfer-Encoding: chunked."),
    ProxyRefusal(505, "unsupported_http_version",
                 "The HTTP version is not supported: send HTTP/1.1 (or HTTP/1.0)."),
    ProxyRefusal(502, "gateway_unavailable",
                 "The gateway behind the proxy did not answer (it may be restarting): retry "
                 "in a few seconds.", retry_after_s=5),
    ProxyRefusal(503, "service_unavailable",
                 "The service cannot take the request now: retry in a few seconds.",
                 retry_after_s=5),
    ProxyRefusal(504, "gateway_timeout",
                 "The gateway did not answer within {read_timeout_s} s: retry later, or send "
                 "a smaller image or a smaller long_side.", retry_after_s=5),
)


#: The proxy's own settings (``deploy/.env.example`` lists them).
HEADER_TIMEOUT_S = Setting("OCR_PROXY_HEADER_TIMEOUT_S", 10, "seconds",
                           "most seconds a client may take to send a request's headers")
BODY_TIMEOUT_S = Setting("OCR_PROXY_BODY_TIMEOUT_S", 20, "seconds",
                         "most seconds between two reads of a request's body")
CONNECTIONS_PER_ADDRESS = Setting("OCR_PROXY_CONNECTIONS_PER_ADDRESS", 64, "requests",
                                  "most requests in progress from one client address")


def proxy_read_timeout_s(inference_timeout_s: float) -> int:
    """Seconds the proxy waits for the gateway's answer: the inference deadline twice (a
    request may wait that long for a gunicorn thread, then infer as long) + 30, so the client
    gets the gateway's own 504."""
    return 2 * int(inference_timeout_s) + 30


@dataclass(frozen=True)
class ProxySettings:
    """What the proxy enforces. Every field has its environment variable
    (:meth:`from_environ`, listed in ``deploy/.env.example``).

    Attributes:
        max_upload_bytes: ``OCR_MAX_UPLOAD_BYTES``, the body limit of ``POST /api/ocr``
            (multipart framing comes on top).
        batch_max_upload_bytes: ``OCR_BATCH_MAX_UPLOAD_BYTES``, that of ``/api/ocr/batch``.
        job_max_upload_bytes: ``OCR_JOB_MAX_BYTES``, that of ``POST /api/jobs`` (only there:
            ``/api/ocr`` keeps its own).
        header_timeout_s: ``OCR_PROXY_HEADER_TIMEOUT_S``, most seconds to send the headers.
        body_timeout_s: ``OCR_PROXY_BODY_TIMEOUT_S``, most seconds between two reads of a
            body.
        connections_per_address: ``OCR_PROXY_CONNECTIONS_PER_ADDRESS``, most requests in
            progress from one client address.
        read_timeout_s: seconds the proxy waits for the gateway's answer: the inference
            deadline twice (``TRITON_TIMEOUT_S``: a request may wait that long for a gunicorn
            thread, then infer as long) + 30, so the client gets the gateway's own 504.
    """

    max_upload_bytes: int = limits.MAX_UPLOAD_BYTES.default
    batch_max_upload_bytes: int = limits.BATCH_MAX_UPLOAD_BYTES.default
    job_max_upload_bytes: int = limits.JOB_MAX_BYTES.default
    header_timeout_s: int = HEADER_TIMEOUT_S.default
    body_timeout_s: int = BODY_TIMEOUT_S.default
    connections_per_address: int = CONNECTIONS_PER_ADDRESS.default
    read_timeout_s: int = proxy_read_timeout_s(TRITON_TIMEOUT_S.default)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> "ProxySettings":
        """The settings of ``environ``, defaults for what it does not set.

        Raises:
            ValueError: a variable is set to a value of the wrong type.
        """
        return cls(
            max_upload_bytes=limits.MAX_UPLOAD_BYTES.read(environ),
            batch_max_upload_bytes=limits.BATCH_MAX_UPLOAD_BYTES.read(environ),
            job_max_upload_bytes=limits.JOB_MAX_BYTES.read(environ),
            header_timeout_s=HEADER_TIMEOUT_S.read(environ),
            body_timeout_s=BODY_TIMEOUT_S.read(environ),
            connections_per_address=CONNECTIONS_PER_ADDRESS.read(environ),
            read_timeout_s=proxy_read_timeout_s(TRITON_TIMEOUT_S.read(environ)))


def _proxy_headers(over_limit: bool = False) -> str:
    """The ``proxy_set_header`` lines of a location (nginx inherits none once a location sets
    one, so each location lists them all)."""
    lines = [
        "proxy_set_header Host $http_host;",
        # The client's address, appended: the gateway believes it from its trusted proxies
        # (OCR_TRUSTED_PROXIES) and throttles and audits by it.
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        'proxy_set_header Connection "";',                 # keep-alive to gunicorn
        # nginx's id of the request (also in its own error answers): the gateway's too.
        f"proxy_set_header {REQUEST_ID_HEADER} $request_id;",
        # Only the proxy says that a body was over the limit, never a client.
        f'proxy_set_header {limits.BODY_OVER_LIMIT_HEADER} "{"1" if over_limit else ""}";',
    ]
    if over_limit:
        lines.append('proxy_set_header Content-Length "";')
    return "\n        ".join(lines)


def _error_pages(body_over_limit: bool = False, indent: int = 8) -> str:
    """The ``error_page`` lines of a context. nginx inherits none into a location that sets
    one, so the server and every location list them all. In the upload locations a body over
    the limit goes to the gateway (its 413 and audit row) instead."""
    lines = []
    for refusal in PROXY_REFUSALS:
        target = ("@body_over_limit" if body_over_limit and refusal.nginx_status == 413
                  else f"{REFUSAL_PATH}{refusal.nginx_status}")
        lines.append(f"error_page {refusal.nginx_status} = {target};")
    return ("\n" + " " * indent).join(lines)


def _refusal_locations(settings: ProxySettings) -> str:
    """One internal location per :data:`PROXY_REFUSALS` entry, answering its JSON. Not a
    named one: nginx cannot redirect a request whose line it could not read (no URI: a 400,
    414) to a named location, and answers its HTML 500 instead."""
    fields = {**settings.__dict__, "header_buffer_kib": HEADER_BUFFER_BYTES // 1024,
              "headers_kib": HEADER_BUFFERS * HEADER_BUFFER_BYTES // 1024}
    blocks = []
    for refusal in PROXY_REFUSALS:
        body = json.dumps({"request_id": "$request_id", "error": {
            "code": refusal.code, "message": refusal.message.format(**fields)}})
        assert "'" not in body and "$" not in body.replace("$request_id", "")
        retry = (f"\n        add_header Retry-After {refusal.retry_after_s} always;"
                 if refusal.retry_after_s else "")
        blocks.append(f"""
    location = {REFUSAL_PATH}{refusal.nginx_status} {{
        internal;
        default_type application/json;
        add_header {REQUEST_ID_HEADER} $request_id always;{retry}
        return {refusal.status} '{body}';
    }}""")
    return "".join(blocks)


def _upload_location(path: str, limit_bytes: int) -> str:
    return f"""
    location = {path} {{
        client_max_body_size {limit_bytes + limits.MULTIPART_SLACK_BYTES};
        {_error_pages(body_over_limit=True)}
        proxy_pass http://ocr_gateway;
        {_proxy_headers()}
    }}"""


def server_config(settings: ProxySettings, listen: str, upstream: str) -> str:
    """The nginx configuration of the proxy, for the ``http`` context (``conf.d/*.conf``).

    Args:
        settings: limits and timeouts.
        listen: nginx's ``listen`` argument: ``8000``, ``127.0.0.1:8000``, ``[::]:8000``.
        upstream: gunicorn's address, ``host:port`` or ``unix:/path``.
    """
    return f"""# Written by `python -m ocr_proxy` from the gateway's settings (see ocr_proxy/config.py):
# change those settings, not this file.
limit_conn_zone $binary_remote_addr zone=ocr_per_address:10m;

upstream ocr_gateway {{
    server {upstream};
    keepalive 16;
    keepalive_timeout {UPSTREAM_KEEPALIVE_S}s;
}}

server {{
    listen {listen};
    server_tokens off;

    # Slow clients: every request is read whole here before gunicorn sees it.
    client_header_timeout {settings.header_timeout_s}s;
    client_body_timeout {settings.body_timeout_s}s;
    send_timeout 60s;
    keepalive_timeout 15s;
    limit_conn ocr_per_address {settings.connections_per_address};
    limit_conn_status 429;
    # Headers: a request line or header over one buffer answers 414 or 494 (JSON, below).
    client_header_buffer_size 1k;
    large_client_header_buffers {HEADER_BUFFERS} {HEADER_BUFFER_BYTES // 1024}k;
    # nginx's own refusals, in the API's JSON shape (every location repeats these lines).
    {_error_pages(indent=4)}

    # Bodies: buffered whole (in memory up to 1 MiB, then a temporary file), chunked ones
    # sent on with a Content-Length. Only the upload endpoints take large ones.
    client_max_body_size 1m;
    client_body_buffer_size 1m;
    proxy_request_buffering on;
    proxy_buffering on;
    proxy_http_version 1.1;
    proxy_read_timeout {settings.read_timeout_s}s;
    proxy_send_timeout 60s;
    # Never a POST twice: another try only on an error before the request was sent, and
    # never for a non-idempotent one (no "non_idempotent"); nginx's default, made explicit.
    proxy_next_upstream error timeout;

    # After an answer given before the body was read, read and discard the rest (for at most
    # 30 s) before closing, so the client reads the answer rather than a connection reset.
    # The wait between two reads is also how long a refused client that sends nothing more
    # waits for the gateway's answer to the refusal: as long as any answer (the soak lost one
    # with 30 s while the gateway's threads were busy with a queue of uploads).
    lingering_close on;
    lingering_time 30s;
    lingering_timeout {settings.read_timeout_s}s;

    location / {{
        {_error_pages()}
        proxy_pass http://ocr_gateway;
        {_proxy_headers()}
    }}
{_upload_location("/api/ocr", settings.max_upload_bytes)}
{_upload_location("/api/ocr/batch", settings.batch_max_upload_bytes)}
{_upload_location("/api/jobs", settings.job_max_upload_bytes)}
{_upload_location("/v1/images:annotate", limits.base64_bytes(settings.batch_max_upload_bytes))}
{_upload_location("/v1/files:annotate", limits.base64_bytes(settings.batch_max_upload_bytes))}

    # The gateway answers a body over the limit itself (JSON 413, audit row): the request is
    # sent on without its body, marked.
    location @body_over_limit {{
        {_error_pages()}
        proxy_pass http://ocr_gateway;
        proxy_pass_request_body off;
        {_proxy_headers(over_limit=True)}
    }}
{_refusal_locations(settings)}
}}
"""


def main(argv: list[str] | None = None) -> int:
    """``python -m ocr_proxy --listen 8080 --upstream gateway:8000 [--output F]``: write
    :func:`server_config` for this environment's settings."""
    parser = argparse.ArgumentParser(prog="python -m ocr_proxy",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="nginx listen argument, e.g. 8080")
    parser.add_argument("--upstream", required=True, help="gunicorn's host:port")
    parser.add_argument("--output", help="file to write (default: standard output)")
    args = parser.parse_args(argv)
    config = server_config(ProxySettings.from_environ(), args.listen, args.upstream)
    if args.output:
        Path(args.output).write_text(config)
    else:
        sys.stdout.write(config)
    return 0

