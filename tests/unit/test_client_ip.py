"""The client IP behind proxies: X-Forwarded-For only from trusted proxies."""

from __future__ import annotations

import pytest

from craig.domain.rate_limit import client_bucket
from craig.entrypoints.http.client_ip import client_ip, trusted_networks

pytestmark = pytest.mark.unit

TRUSTED = trusted_networks("10.0.0.0/8, 127.0.0.1")


@pytest.mark.parametrize(
    ("peer", "forwarded", "expected"),
    [
        ("203.0.113.9", [], "203.0.113.9"),
        ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),  # untrusted peer: the header is ignored
        ("10.0.0.5", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.5", ["6.6.6.6, 198.51.100.1, 10.0.0.7"], "198.51.100.1"),  # spoofed left part skipped
        ("10.0.0.5", ["6.6.6.6", "198.51.100.1"], "198.51.100.1"),  # several header lines
        ("10.0.0.5", ["10.1.1.1, 10.0.0.7"], "10.1.1.1"),  # only proxies: the leftmost
        ("10.0.0.5", ["not-an-ip, 10.0.0.7"], "10.0.0.7"),
        ("10.0.0.5", [], "10.0.0.5"),
        ("127.0.0.1", ["2001:db8::1"], "2001:db8::1"),
        (None, ["198.51.100.1"], None),
    ],
)
def test_client_ip(peer: str | None, forwarded: list[str], expected: str | None) -> None:
    assert client_ip(peer, forwarded, TRUSTED) == expected


def test_nothing_is_trusted_by_default() -> None:
    assert client_ip("127.0.0.1", ["198.51.100.1"], trusted_networks("")) == "127.0.0.1"


@pytest.mark.parametrize(
    ("address", "bucket"),
    [
        ("203.0.113.9", "intake:203.0.113.9"),
        ("2001:db8:1:2:3:4:5:6", "intake:2001:db8:1:2::/64"),
        ("2001:DB8:1:2::1", "intake:2001:db8:1:2::/64"),  # one /64, one bucket
        ("2001:db8:1:3::1", "intake:2001:db8:1:3::/64"),
        ("::ffff:198.51.100.7", "intake:198.51.100.7"),  # IPv4-mapped: the IPv4 address
        (None, "intake:unknown"),
        ("not-an-ip", "intake:unknown"),
    ],
)
def test_a_client_bucket_is_an_ipv4_address_or_an_ipv6_64(address: str | None, bucket: str) -> None:
    assert client_bucket("intake", address) == bucket
