"""Which IP addresses a webhook may be sent to (the SSRF address rules).

Every address a callback host resolves to is checked (OWASP SSRF Prevention Cheat Sheet:
validate the *resolved* address, all of them, and connect to the one validated — see
:mod:`ocr_jobs.webhooks.delivery`). The categories come from Python's :mod:`ipaddress`
properties (which follow the IANA special-purpose registries); the only ranges written here
are those it has no property for: the cloud metadata addresses, IPv6 unique-local (for the
reason's name only) and the NAT64 prefixes whose embedded IPv4 address is checked instead.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Cloud instance-metadata endpoints, refused whatever the policy says: AWS/Azure/GCP/
#: Oracle/DigitalOcean 169.254.169.254, AWS ECS task metadata 169.254.170.2, AWS IMDS over
#: IPv6 fd00:ec2::254, Alibaba Cloud 100.100.100.200 (OWASP SSRF cheat sheet; the providers'
#: documentation).
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200"))

#: Host names of metadata services (GCP; AWS's ``instance-data``), refused by name before
#: any lookup (their addresses are refused too, this only makes the answer clearer).
METADATA_HOSTS = frozenset({
    "metadata.google.internal", "metadata.goog", "metadata", "instance-data",
    "instance-data.ec2.internal"})

_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")  # RFC 4193
#: NAT64 prefixes (RFC 6052 well-known, RFC 8215 local-use): the IPv4 address in the last 32
#: bits is what the packet reaches, so that one is checked.
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))

#: Reasons never lifted by ``allow_private``.
ALWAYS_REFUSED = frozenset({"metadata", "link_local", "multicast", "reserved", "unspecified"})
#: Reasons lifted by ``allow_private``.
PRIVATE_REASONS = frozenset({"loopback", "private", "unique_local", "not_global"})

#: Human wording of each reason.
REASON_TEXT = {
    "metadata": "a cloud metadata address",
    "link_local": "a link-local address",
    "multicast": "a multicast address",
    "reserved": "a reserved address",
    "unspecified": "the unspecified address",
    "loopback": "a loopback address",
    "private": "a private address",
    "unique_local": "a unique-local IPv6 address",
    "not_global": "a non-public (shared or special-purpose) address",
}


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, where the packet would really go:
    IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002:AABB:CCDD::/48`` and NAT64 ``64:ff9b::a.b.c.d``.
    ``None`` for other addresses (Teredo's 2001::/32 is refused as private anyway)."""
    if ip.version != 6:
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def classify(ip: IPAddress) -> str | None:
    """Why ``ip`` is not an ordinary public address, as one of :data:`REASON_TEXT`'s keys, or
    ``None`` when it is one. An IPv6 address carrying an IPv4 address
    (:func:`embedded_ipv4`) is judged by the IPv4 one."""
    if ip in METADATA_ADDRESSES:
        return "metadata"
    inner = embedded_ipv4(ip)
    if inner is not None:
        return classify(inner)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if ip.is_link_local:
        return "link_local"
    if ip.is_loopback:
        return "loopback"
    if ip.version == 6 and ip in _UNIQUE_LOCAL:
        return "unique_local"
    if ip.is_reserved:
        return "reserved"
    if ip.is_private or (ip.version == 6 and ip.is_site_local):
        return "private"
    if not ip.is_global:
        return "not_global"  # e.g. 100.64.0.0/10 (RFC 6598 shared address space, CGNAT)
    return None


def refusal_reason(ip: IPAddress, *, allow_private: bool) -> str | None:
    """The reason ``ip`` is refused as a webhook target under the policy's ``allow_private``,
    or ``None`` when it may be connected to."""
    reason = classify(ip)
    if reason is None or (allow_private and reason in PRIVATE_REASONS):
        return None
    return reason
