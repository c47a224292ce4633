"""Which addresses a feed fetch may reach, and which hosts an operator named as private.

Pure (no I/O): :mod:`digests.sources.fetch` resolves names and asks here about each address.

Python's ``ipaddress`` tables move between versions (3.11 calls 192.0.0.8 global, 3.13 does
not), and "global" is not "safe to fetch": carrier-grade NAT, benchmarking and IETF protocol
ranges reach machines nobody meant to expose. So the non-public ranges are listed here, and
the interpreter's flags are only an extra check on top.
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from urllib.parse import urlsplit

_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NON_PUBLIC_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches the local host on Linux
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, cloud metadata
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments, all of it
        "192.0.2.0/24",
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)
NON_PUBLIC_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/127",  # unspecified and loopback
        "64:ff9b::/96",  # NAT64: reaches whatever IPv4 address it embeds
        "64:ff9b:1::/48",
        "100::/64",  # discard
        "2001::/23",  # IETF protocol assignments (Teredo among them)
        "2001:db8::/32",
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated, still routed by some stacks)
        "ff00::/8",  # multicast
    )
)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    return ip.ipv4_mapped or ip.sixtofour


def is_public_ip(ip: _IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_v4(ip)
        if embedded is not None:
            return is_public_ip(embedded)
        if any(ip in net for net in NON_PUBLIC_V6):
            return False
    elif any(ip in net for net in NON_PUBLIC_V4):
        return False
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_unspecified
    )


def is_public_address(address: str) -> bool:
    """True when ``address`` is a globally routable unicast IP (what a feed host may be)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return is_public_ip(ip)


def literal_ip(host: str) -> _IPAddress | None:
    """The address ``host`` spells without DNS, in any form a resolver accepts: dotted,
    IPv6 (bracketed or not), and the old integer, hex, octal and short IPv4 forms
    (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``). None for a name."""
    host = host.strip().strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
        return None
    try:
        # inet_aton is the parser getaddrinfo uses for numeric hosts: the same forms.
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def is_localhost_name(host: str) -> bool:
    host = host.strip().rstrip(".").lower()
    return host == "localhost" or host.endswith(".localhost")


def names_private_host(location: str) -> bool:
    """True when ``location`` itself says it is local: a file, ``localhost``, or a literal
    non-public address (any spelling). A plain name that happens to resolve to a private
    address does not count: that needs the operator's explicit ``allow_private``."""
    parts = urlsplit(location)
    if parts.scheme not in ("http", "https"):
        return parts.scheme == "file" or "://" not in location or Path(location).is_absolute()
    host = parts.hostname or ""
    if is_localhost_name(host):
        return True
    ip = literal_ip(host)
    return ip is not None and not is_public_ip(ip)


__all__ = [
    "NON_PUBLIC_V4",
    "NON_PUBLIC_V6",
    "is_localhost_name",
    "is_public_address",
    "is_public_ip",
    "literal_ip",
    "names_private_host",
]
