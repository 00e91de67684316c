"""Read and drop the part of a request body the application did not read, before it answers.

Why: the gateway refuses many requests from their headers alone (401, 403, 413, 415, 429, a
400 from a parameter), without reading the body. gunicorn (27, gthread) then drains at most
64 KiB of the unread body after the answer (``gunicorn.http.parser._DRAIN_MAX_BYTES``, bounded
so a client cannot hold a thread); past that it closes the connection, although the answer it
has just sent says ``Connection: keep-alive``, and the kernel resets it (RST) because unread
bytes are left in its buffer. The proxy in front (nginx in ``make serve`` and compose,
ingress-nginx on Kubernetes) keeps connections to gunicorn open for reuse, so the reset either
destroys the answer before nginx has read it (a bare 502 to the refused client) or comes after
nginx has put the connection back in its pool and sent the next request, someone else's, on
it (a 502 to a neighbour: nginx never resends a POST). That is gunicorn issue #872 (``deploy/README.md`` has
the measurements).

So the rest of the body is read here, in steps of 64 KiB and dropped, after the application
has made its answer and before the server sends any of it: when the proxy gets the answer,
the connection is clean and may carry the next request. The proxy has buffered the whole body
before it sent any of it to gunicorn (``proxy_request_buffering``, ingress-nginx's default
too) and never sends more than the largest body the gateway takes, so this costs one
loopback or cluster-network copy of a body the gateway refused (20 MiB: tens of ms). Both
bounds below only act on a client that reaches gunicorn without the proxy: a declared body
over :attr:`UnreadBodyDrain.max_bytes` is not read at all, and reading stops at the deadline;
gunicorn then closes that connection itself (WSGI cannot ask it for ``Connection: close``:
gunicorn drops hop-by-hop headers an application sets, as PEP 3333 requires).

Chosen over answering ``Connection: close`` (which gunicorn cannot be asked for, see above,
and which still lets the reset destroy the refused client's own answer) and over turning off
the proxy's keep-alive to gunicorn (the same reset race for the refused client, and a new
connection per request).
"""

from __future__ import annotations

import logging
import socket
import time

logger = logging.getLogger(__name__)

#: Bytes read from the body at a time while draining it.
CHUNK_BYTES = 64 * 1024


class CountingInput:
    """``wsgi.input`` that counts what the application read of the body.

    Args:
        stream: the server's ``wsgi.input``.
        length: the declared body length (``CONTENT_LENGTH``) in bytes, or None when the body
            has none (chunked; only read to its end when the server terminates the stream,
            ``wsgi.input_terminated``).
    """

    def __init__(self, stream, length: int | None):
        self.stream = stream
        self.length = length
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size) if size is not None and size >= 0 else self.stream.read()
        self.consumed += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        line = self.stream.readline(size) if size is not None and size >= 0 else \
            self.stream.readline()
        self.consumed += len(line)
        return line

    def readlines(self, hint: int = -1) -> list[bytes]:
        lines = self.stream.readlines(hint)
        self.consumed += sum(len(line) for line in lines)
        return lines

    def __iter__(self):
        while line := self.readline():
            yield line

    def remaining(self) -> int | None:
        """Bytes of the declared body not read yet; None when no length was declared."""
        return None if self.length is None else max(0, self.length - self.consumed)


def declared_length(environ: dict) -> int | None:
    """``CONTENT_LENGTH`` as an int; 0 when absent or invalid for a stream the server does
    not terminate (PEP 3333: never read past it), None for a terminated one without a length
    (a chunked body, read to its end)."""
    try:
        return max(0, int(environ.get("CONTENT_LENGTH") or ""))
    except ValueError:
        return None if environ.get("wsgi.input_terminated") else 0


class UnreadBodyDrain:
    """WSGI middleware: after ``app`` has answered, read and drop what it left of the body.

    Args:
        app: the WSGI application (Django's).
        max_bytes: the most unread bytes read: the largest body the gateway accepts (an upload
            limit plus multipart framing). A larger declared rest is left unread.
        deadline_s: most seconds spent reading (only a client without the proxy in front can
            be slow); gunicorn's socket is given the remaining time as its timeout.
    """

    def __init__(self, app, max_bytes: int, deadline_s: float = 10.0):
        self.app = app
        self.max_bytes = max_bytes
        self.deadline_s = deadline_s

    def __call__(self, environ, start_response):
        body = CountingInput(environ["wsgi.input"], declared_length(environ))
        environ["wsgi.input"] = body
        result = self.app(environ, start_response)
        # Django has made the whole answer (start_response called, the body an iterable the
        # server has not started to send): drain now, before the proxy sees any of it.
        self.drain(body, environ.get("gunicorn.socket"))
        return result

    def drain(self, body: CountingInput, sock: socket.socket | None = None) -> bool:
        """Read the rest of ``body`` and drop it.

        Args:
            body: the request's counted input.
            sock: the connection's socket, whose timeout bounds each read by the deadline
                (gunicorn passes it as ``gunicorn.socket``); without it only bytes are bounded.

        Returns:
            True when the body has been read to its end (the connection can carry another
            request), False when it was left unread (over :attr:`max_bytes`, past the
            deadline, or the client went away).
        """
        remaining = body.remaining()
        if remaining == 0:
            return True
        if remaining is not None and remaining > self.max_bytes:
            logger.warning("request body not drained: %d unread bytes are over the %d-byte "
                           "cap; the server closes this connection", remaining, self.max_bytes)
            return False
        deadline = time.monotonic() + self.deadline_s
        previous_timeout = sock.gettimeout() if sock is not None else None
        drained = 0
        try:
            while remaining is None or remaining > 0:
                left_s = deadline - time.monotonic()
                if left_s <= 0 or drained > self.max_bytes:
                    break
                if sock is not None:
                    sock.settimeout(left_s)
                data = body.read(CHUNK_BYTES if remaining is None else
                                 min(CHUNK_BYTES, remaining))
                if not data:
                    return remaining is None      # a declared body must not end early
                drained += len(data)
                if remaining is not None:
                    remaining -= len(data)
            if remaining == 0:
                return True
        except OSError:                           # timed out, or the client went away
            pass
        finally:
            if sock is not None:
                try:
                    sock.settimeout(previous_timeout)
                except OSError:
                    pass
        logger.warning("request body not drained within %.0f s / %d bytes; the server "
                       "closes this connection", self.deadline_s, self.max_bytes)
        return False
