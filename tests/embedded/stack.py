"""The serving stack of ``make serve`` for tests (:class:`~ocr_embedded.stack.Stack`): gunicorn
(``deploy/gunicorn.conf.py``, gthread) behind the buffering proxy (nginx), with its own SQLite
database and API keys; and raw HTTP on a socket for what ordinary clients will not send."""

from __future__ import annotations

import json
import socket
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ocr_embedded.gunicorn_server import Gunicorn
from ocr_embedded.proxy import BufferingProxy
from ocr_embedded.stack import Stack, manage
from ocr_proxy.config import ProxySettings

#: Keys made in every stack: name -> create_api_key options.
KEYS = {"rate30": {"rate_per_minute": 30}, "quota30": {"daily_quota": 30},
        "rate1": {"rate_per_minute": 1}}
#: The superuser of every stack (for admin sign-in tests).
ADMIN = ("root", "right-horse-battery-staple")

_MAKE_KEYS = """
from django.contrib.auth.models import User
from ocr_api.models import ApiKey
import json
keys = {{}}
for name, options in {keys!r}.items():
    keys[name] = ApiKey.objects.create_key(name=name, **options)[1]
User.objects.create_superuser({admin[0]!r}, "root@example.com", {admin[1]!r})
print("KEYS " + json.dumps(keys))
"""


@dataclass
class ProxiedGateway:
    """A running gunicorn + nginx pair.

    Attributes:
        stack: the servers (``stack.port`` is where clients connect).
        keys: the keys of :data:`KEYS`, by name.
    """

    stack: Stack
    keys: dict = field(default_factory=dict)

    @property
    def gunicorn(self) -> Gunicorn:
        return self.stack.gunicorn

    @property
    def proxy(self) -> BufferingProxy:
        return self.stack.nginx

    @property
    def key(self) -> str:
        """An API key with a rate of 1,000,000 per minute."""
        return self.stack.key

    @property
    def database(self) -> Path:
        """The gateway's SQLite file."""
        return self.stack.database

    @property
    def port(self) -> int:
        return self.stack.port

    def query(self, sql: str, *args) -> list[tuple]:
        """Rows of ``sql`` on the gateway's database (its tables, as gunicorn wrote them)."""
        with sqlite3.connect(self.database, timeout=30) as db:
            return db.execute(sql, args).fetchall()

    def stop(self) -> None:
        self.stack.stop()


def start_proxied_gateway(var: Path, triton_grpc_url: str | None = None,
                          proxy_settings: ProxySettings | None = None,
                          **env: str) -> ProxiedGateway:
    """Start gunicorn (2 workers x 4 threads; make serve has 8) on ``var``'s own database,
    and nginx in front of it.

    Args:
        var: a fresh folder (database, logs).
        triton_grpc_url: the Triton to use; None: an address nothing listens on (for tests
            that never infer).
        proxy_settings: the proxy's limits (default: those of the gateway's environment).
        env: more settings of the gateway.
    """
    stack = Stack(var, triton=False, triton_grpc_url=triton_grpc_url, state=var, workers=2,
                  threads=4, gateway_env={"TRITON_TIMEOUT_S": "180", **env},
                  proxy_settings=proxy_settings)
    # The keys and the admin before gunicorn starts, in the database the stack prepares.
    created = manage(["shell", "-c", _MAKE_KEYS.format(keys=KEYS, admin=ADMIN)],
                     stack.prepare_state())
    keys = json.loads(created.split("KEYS ", 1)[1])
    stack.start()
    return ProxiedGateway(stack, keys)


@dataclass
class RawResponse:
    status: int
    headers: dict          # lower-case names
    body: bytes

    def json(self):
        return json.loads(self.body)


def raw_request(port: int, data: bytes, source: str = "127.0.0.1",
                timeout_s: float = 30) -> RawResponse:
    """Send ``data`` as is on a new connection to 127.0.0.1:``port`` from ``source``, read
    one answer (the server closes, or its Content-Length is read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s,
                                  source_address=(source, 0)) as sock:
        sock.sendall(data)
        received = b""
        while True:
            head, sep, rest = received.partition(b"\r\n\r\n")
            if sep:
                lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in
                           (line.partition(":") for line in lines[1:])}
                length = int(headers.get("content-length", -1))
                if 0 <= length <= len(rest):
                    return RawResponse(int(lines[0].split()[1]), headers, rest[:length])
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                if not sep:
                    raise ConnectionError(f"no answer, received {received[:200]!r}")
                return RawResponse(int(lines[0].split()[1]), headers, rest)
            received += chunk
