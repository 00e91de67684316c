"""The Triton replicas behind one gRPC target (``TRITON_GRPC_URL``).

The gateway's channel is given the target as it is and balances calls round-robin itself;
this module only names the replicas one by one, so that each can be probed on its own
(``/api/ready`` reports how many are ready). Targets use gRPC's naming syntax:

- ``host:port`` -- one replica (whatever the name resolves to);
- ``ipv4:10.0.0.1:8001,10.0.0.2:8001`` or ``ipv6:[::1]:8001,[::2]:8001`` -- a fixed list;
- ``dns:///triton-headless:8001`` (also ``dns://resolver/name:port``, ``dns:name:port``) --
  every address the name resolves to now (a headless Service, ``--scale triton=N``);
- ``unix:/path`` -- one replica on a Unix socket.
"""

from __future__ import annotations

import socket


def _split_host_port(endpoint: str) -> tuple[str, str]:
    """``("host", "port")`` of ``host:port`` or ``[v6]:port``."""
    if endpoint.startswith("["):
        host, _, port = endpoint[1:].partition("]:")
        return host, port
    host, _, port = endpoint.rpartition(":")
    return host, port


def _address_target(family: int, address: str, port: str) -> str:
    return f"ipv6:[{address}]:{port}" if family == socket.AF_INET6 else f"ipv4:{address}:{port}"


def replicas(target: str) -> list[str]:
    """One gRPC target per replica of ``target``, in a stable order.

    Args:
        target: a gRPC target, see the module's docstring.

    Returns:
        targets that each reach exactly one replica (``ipv4:a:port``, ``ipv6:[a]:port``, or
        ``target`` itself when it names one server); ``[]`` when a ``dns:`` name does not
        resolve now.
    """
    target = target.strip()
    for scheme in ("ipv4:", "ipv6:"):
        if target.startswith(scheme):
            return [scheme + endpoint.strip()
                    for endpoint in target[len(scheme):].split(",") if endpoint.strip()]
    if target.startswith("dns:"):
        name = target[len("dns:"):]
        if name.startswith("//"):
            name = name[2:].partition("/")[2]       # drop the (optional) DNS authority
        host, port = _split_host_port(name)
        try:
            found = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return []
        unique = dict.fromkeys(_address_target(family, sockaddr[0], str(sockaddr[1]))
                               for family, _, _, _, sockaddr in found)
        return sorted(unique)
    return [target]
