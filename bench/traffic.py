"""Bytes that cross the API <-> inference-server boundary, counted two ways.

1. **Serialized messages** (the headline figure). Each gRPC call's ``ModelInferRequest`` and
   ``ModelInferResponse`` protobuf is measured with ``ByteSize()`` - exactly the payload gRPC
   puts on the wire for that call, before HTTP/2 framing. :class:`CountingStub` wraps the
   stub of a ``tritonclient.grpc.InferenceServerClient`` to see every message.
2. **TCP payload on the socket** (the cross-check). :func:`tcp_counters` reads the kernel's
   per-connection ``bytes_sent`` / ``bytes_received`` (``ss -ti``) of every TCP connection to
   Triton's gRPC port; the difference over a run is what really went over the network,
   HTTP/2 frames, headers and keep-alive pings included. It covers processes the harness
   does not control (the gateway's gunicorn workers), needs ``ss`` (iproute2) and Linux, and
   misses connections that close during the run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading

_SS_FIELD = re.compile(r"\b(bytes_acked|bytes_sent|bytes_received):(\d+)")


class CountingStub:
    """A gRPC stub proxy that adds up the serialized size of inference messages (bytes).

    ``tritonclient.grpc.InferenceServerClient`` keeps its generated stub in
    ``_client_stub``; :meth:`install` swaps in this proxy, which forwards every call and, for
    ``ModelInfer``, adds ``request.ByteSize()`` to :attr:`sent` and ``response.ByteSize()`` to
    :attr:`received`. One proxy per client; counters are per proxy, not per thread.
    """

    def __init__(self, stub):
        self._stub = stub
        self._lock = threading.Lock()
        self.sent = 0
        self.received = 0

    @classmethod
    def install(cls, client) -> "CountingStub":
        """Wrap ``client``'s stub and return the proxy.

        Raises:
            RuntimeError: this tritonclient version keeps its stub elsewhere.
        """
        stub = getattr(client, "_client_stub", None)
        if stub is None:
            raise RuntimeError("tritonclient.grpc.InferenceServerClient has no _client_stub; "
                               "update bench/traffic.py for this tritonclient version")
        proxy = cls(stub)
        client._client_stub = proxy
        return proxy

    def take(self) -> tuple[int, int]:
        """``(sent, received)`` bytes since the last call, and reset them."""
        with self._lock:
            counts = (self.sent, self.received)
            self.sent = self.received = 0
            return counts

    def ModelInfer(self, request, *args, **kwargs):  # noqa: N802 - the gRPC method name
        response = self._stub.ModelInfer(request, *args, **kwargs)
        with self._lock:
            self.sent += request.ByteSize()
            self.received += response.ByteSize()
        return response

    def __getattr__(self, name):
        return getattr(self._stub, name)


def ss_available() -> bool:
    """True when ``ss`` (iproute2) can be run."""
    return shutil.which("ss") is not None


def tcp_counters(server_port: int) -> dict[tuple[str, str], tuple[int, int]] | None:
    """Per-connection TCP payload counters of client connections to ``server_port``.

    Returns:
        ``{(local address, peer address): (bytes sent, bytes received)}``
        for every established connection whose peer port is ``server_port``, or None when
        ``ss`` is not available.
    """
    if not ss_available():
        return None
    try:
        out = subprocess.run(
            ["ss", "-tinH", "state", "established", f"( dport = :{server_port} )"],
            capture_output=True, text=True, timeout=10, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    counters = {}
    key = None
    for line in out.splitlines():
        fields = line.split()
        if not line.startswith((" ", "\t")) and len(fields) >= 4:
            # "<recv-q> <send-q> <local> <peer>" (state is filtered out, so not printed)
            key = (fields[-2], fields[-1])
            continue
        if key is None:
            continue
        values = dict((name, int(v)) for name, v in _SS_FIELD.findall(line))
        # bytes_acked counts the SYN too; bytes_sent would count retransmissions (none on
        # loopback). Prefer bytes_sent when the kernel reports it.
        sent = values.get("bytes_sent", max(0, values.get("bytes_acked", 1) - 1))
        counters[key] = (sent, values.get("bytes_received", 0))
        key = None
    return counters


def tcp_delta(before, after) -> tuple[int, int] | None:
    """Bytes ``(sent, received)`` by clients between two :func:`tcp_counters` snapshots."""
    if before is None or after is None:
        return None
    sent = received = 0
    for key, (s, r) in after.items():
        s0, r0 = before.get(key, (0, 0))
        sent += max(0, s - s0)
        received += max(0, r - r0)
    return sent, received
