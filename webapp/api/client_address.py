"""The client's address, as the sign-in lockout and the sign-in throttle count it.

REMOTE_ADDR is the peer that connected (behind the front, the front's word for its own peer:
webapp/wsgi.py). Where that peer is a proxy NETLOOM_TRUSTED_PROXIES names (addresses or networks;
default none), the client is the nearest address in X-Forwarded-For that is not a trusted proxy,
read from the right: each proxy appends the peer it saw, so everything left of the first address
no trusted proxy wrote is the client's own claim and is never believed. With no trusted proxy, a
client's X-Forwarded-For changes nothing.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def trusted_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    """NETLOOM_TRUSTED_PROXIES parsed; a bad entry is an error naming it."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError as exc:
            raise ValueError(f"NETLOOM_TRUSTED_PROXIES: {entry!r} is not an address or network") from exc
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _trusted(address: Any, networks: tuple[Network, ...]) -> bool:
    return address is not None and any(address in network for network in networks)


def client_address(request: Any) -> str | None:
    """The client's address for `request` (a Django or DRF request): see the module's docstring."""
    meta = request.META
    peer = meta.get("REMOTE_ADDR")
    networks = trusted_networks(tuple(settings.NETLOOM_TRUSTED_PROXIES))
    if not networks or not _trusted(_address(peer or ""), networks):
        return peer
    hops = [hop for hop in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return peer  # a trusted proxy passed on something that is not an address: stop there
        if not _trusted(address, networks):
            return str(address)
    # Every hop a trusted proxy: the farthest one is the client as far as anyone can tell.
    return str(_address(hops[0])) if hops else peer
