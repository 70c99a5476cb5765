"""The client's IP address, for per-client limits.

``X-Forwarded-For`` is honoured only when the TCP peer is a trusted proxy
(``CRAIG_HTTP__TRUSTED_PROXIES``): the header is read right to left, skipping trusted proxies,
and the first address that is not one of them is the client. Anyone else could write whatever
they like into the header, so from an untrusted peer it is ignored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from functools import lru_cache

from craig.domain.constants import TRUSTED_PROXY_SETTINGS_CACHED

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=TRUSTED_PROXY_SETTINGS_CACHED)
def trusted_networks(setting: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in setting.split(",") if part.strip())


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, networks: Sequence[Network]) -> bool:
    return any(address in network for network in networks)


def client_ip(peer: str | None, forwarded_for: Sequence[str], trusted: Sequence[Network]) -> str | None:
    """``peer``: the TCP peer's address; ``forwarded_for``: every X-Forwarded-For header value."""
    peer_address = _address(peer) if peer else None
    if peer_address is None or not _trusted(peer_address, trusted):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    current = peer_address
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            break  # garbage written by whoever stands left of the last trusted proxy
        current = address
        if not _trusted(address, trusted):
            break
    return str(current)
