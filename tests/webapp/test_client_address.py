"""The client's address behind proxies (webapp/api/client_address.py): X-Forwarded-For is read
only from a trusted proxy, from the right, and a client's own claim is never believed."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from webapp.api.client_address import client_address, trusted_networks


def _address(settings, trusted: list[str], peer: str, forwarded: str | None = None) -> str | None:
    settings.NETLOOM_TRUSTED_PROXIES = trusted
    headers = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return client_address(RequestFactory().get("/", REMOTE_ADDR=peer, **headers))


def test_with_no_trusted_proxy_the_peer_is_the_client_whatever_it_forwards(settings):
    assert _address(settings, [], "203.0.113.5", "10.0.0.1") == "203.0.113.5"


def test_from_an_untrusted_peer_forwarded_for_is_ignored(settings):
    assert _address(settings, ["10.0.0.0/8"], "203.0.113.5", "198.51.100.7") == "203.0.113.5"


def test_through_trusted_proxies_the_nearest_untrusted_hop_is_the_client(settings):
    # The client claimed 1.2.3.4; the TLS proxy (10.0.0.2) appended the client it saw (198.51.100.7);
    # the front appended the TLS proxy.
    forwarded = "1.2.3.4, 198.51.100.7, 10.0.0.2"
    assert _address(settings, ["10.0.0.0/8"], "10.0.0.3", forwarded) == "198.51.100.7"
    assert _address(settings, ["10.0.0.2", "10.0.0.3"], "10.0.0.3", forwarded) == "198.51.100.7"


def test_ipv6_and_odd_hops(settings):
    assert _address(settings, ["::1"], "::1", "2001:db8::7, ::1") == "2001:db8::7"
    # A trusted proxy that passed on something that is not an address: the proxy itself counts.
    assert _address(settings, ["127.0.0.1"], "127.0.0.1", "unknown") == "127.0.0.1"
    # Only trusted hops: the farthest one; no header at all: the peer.
    assert _address(settings, ["127.0.0.0/8"], "127.0.0.1", "127.0.0.9, 127.0.0.1") == "127.0.0.9"
    assert _address(settings, ["127.0.0.1"], "127.0.0.1") == "127.0.0.1"


def test_a_bad_trusted_proxy_entry_is_named():
    with pytest.raises(ValueError, match="NETLOOM_TRUSTED_PROXIES: 'proxy.example' is not an address"):
        trusted_networks(("10.0.0.0/8", "proxy.example"))
