"""The partner gateway against a partner that breaks the rules, on real HTTP on 127.0.0.1:
whatever it answers is a result of the dispatch or an ``UpstreamError``, never an exception
that turns a 2xx into a crash (retried: a duplicate, then failed) or a read into a 500."""

from __future__ import annotations

import asyncio
import gzip
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from craig.adapters.partners.http import HttpPartnerGateway
from craig.domain.exchange import PartnerAnswer, TransportFailure, Verdict, classify
from craig.domain.pages import PageRequest
from craig.domain.partner_records import parse_record
from craig.ports.exchange import Delivery, UpstreamDeserializeError, UpstreamError
from craig.usecases.exchange.partner_api import fetch_page
from tests.support.exchange_data import a_partner
from tests.support.raw_http import Script, answer, raw_http

pytestmark = pytest.mark.integration

TOKEN = answer("200 OK", b'{"access_token": "t0k3n", "token_type": "Bearer", "expires_in": 300}')


async def _pace() -> None:
    return None


@pytest.fixture
async def gateway() -> AsyncIterator[HttpPartnerGateway]:
    gateway = HttpPartnerGateway(connect_timeout_seconds=2, read_timeout_seconds=1, max_connections=4)
    try:
        yield gateway
    finally:
        await gateway.aclose()


def scripted(token: Script = TOKEN, **paths: Script) -> Callable[[str, str], Script]:
    def script(_method: str, path: str) -> Script:
        return token if path == "/oauth/token" else paths[path]

    return script


async def _send(gateway: HttpPartnerGateway, base: str) -> PartnerAnswer | TransportFailure:
    return await gateway.send(a_partner(base_url=base), Delivery(uuid.uuid4(), {"case": "c-1"}), _pace)


@pytest.mark.parametrize("retry_after", ["\u00b2", "99999999999999999999999", "9" * 5000, "Mon, 99 Foo 2026"])
async def test_a_2xx_is_sent_whatever_retry_after_it_carries(gateway: HttpPartnerGateway, retry_after: str) -> None:
    header = f"Retry-After: {retry_after}".encode().decode("latin-1")
    async with raw_http(scripted(**{"/transactions": answer("201 Created", b"{}", header)})) as partner:
        result = await _send(gateway, partner.base)
    assert isinstance(result, PartnerAnswer) and result.status == 201 and result.retry_after is None
    assert classify(result) is Verdict.SENT


async def test_a_refusal_with_a_retry_after_no_timedelta_holds_waits_by_the_domains_rules(
    gateway: HttpPartnerGateway,
) -> None:
    header = "Retry-After: 99999999999999999999999"
    async with raw_http(scripted(**{"/transactions": answer("429 Too Many Requests", b"", header)})) as partner:
        result = await _send(gateway, partner.base)
    assert isinstance(result, PartnerAnswer) and (result.status, result.retry_after) == (429, None)


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    "grant",
    [
        b'{"access_token": "t", "expires_in": NaN}',
        b'{"access_token": "t", "expires_in": Infinity}',
        b'{"access_token": "t", "expires_in": 1e400}',
        b'{"access_token": "t", "expires_in": true}',
        b'{"access_token": "t", "expires_in": "300"}',
        '{"access_token": "t\u00f6k\u20acn"}'.encode(),
        b'{"access_token": "two words"}',
        DEEP,
    ],
    ids=["nan", "infinity", "1e400", "true", "a string", "not ascii", "a space", "nested deep"],
)
async def test_a_grant_that_cannot_be_used_fails_at_the_token_endpoint_for_sends_and_reads(
    gateway: HttpPartnerGateway, grant: bytes
) -> None:
    records = answer("200 OK", b'{"items": [], "page": 1, "per_page": 5, "total": 0}')
    script = scripted(answer("200 OK", grant), **{"/transactions": answer("201 Created", b"{}"), "/records": records})
    async with raw_http(script) as partner:
        result = await _send(gateway, partner.base)
        with pytest.raises(UpstreamError):
            await gateway.get_json(a_partner(base_url=partner.base), "/records", {}, _pace)
    assert isinstance(result, TransportFailure) and result.kind == "protocol" and result.at_token_endpoint
    assert partner.requests.count("POST /transactions") == 0  # no token, no send


@pytest.mark.parametrize("lifetime", [b"1e12", b"9" * 57, b"1" + b"0" * 400], ids=["1e12", "57 digits", "401 digits"])
async def test_a_huge_lifetime_is_read_as_a_day(gateway: HttpPartnerGateway, lifetime: bytes) -> None:
    grant = answer("200 OK", b'{"access_token": "t", "expires_in": ' + lifetime + b"}")
    async with raw_http(scripted(grant, **{"/transactions": answer("201 Created", b"{}")})) as partner:
        registered = a_partner(base_url=partner.base)
        result = await gateway.send(registered, Delivery(uuid.uuid4(), {}), _pace)
        assert classify(result) is Verdict.SENT
        assert 86_000 < gateway.tokens.valid_for(registered) <= 86_400


async def test_records_nested_too_deeply_are_an_upstream_deserialize_error(gateway: HttpPartnerGateway) -> None:
    async with raw_http(scripted(**{"/records": answer("200 OK", DEEP)})) as partner:
        with pytest.raises(UpstreamDeserializeError, match="nested too deeply"):
            await gateway.get_json(a_partner(base_url=partner.base), "/records", {}, _pace)


async def test_an_answer_dripped_a_byte_at_a_time_ends_as_a_timeout(gateway: HttpPartnerGateway) -> None:
    """httpx's read timeout is per read: a byte every 0.5 s never trips a 1 s read timeout."""
    body = b'{"items": [], "page": 1, "per_page": 5, "total": 0}'
    head = answer("200 OK", body)[0][0][: -len(body)]
    drip: Script = [(head, 0.0), *((bytes([b]), 0.5) for b in body)]  # about 26 s in all
    async with raw_http(scripted(**{"/records": drip})) as partner:
        reading = asyncio.create_task(gateway.get_json(a_partner(base_url=partner.base), "/records", {}, _pace))
        # A guard against hanging the suite, not a measurement: the exchange's limit is its
        # timeouts added up (a few seconds here); the drip lasts about 26 s.
        done, _ = await asyncio.wait({reading}, timeout=20)
        assert reading in done, "the drip held the read"
        with pytest.raises(UpstreamError) as failed:
            reading.result()
    assert "timeout" in failed.value.detail.lower()


async def test_a_page_other_than_the_one_asked_for_is_an_upstream_deserialize_error(
    gateway: HttpPartnerGateway,
) -> None:
    """A partner's page is passed on as the page the case worker asked for: 5,000 items for a
    page of 1 ended as a 500 (the read's audit entry holds at most 1,000 ids)."""
    items = [{"id": str(n), "type": "case"} for n in range(5000)]
    pages = {
        "more items": {"items": items, "page": 1, "per_page": 1, "total": 5000},
        "another page": {"items": [], "page": 7, "per_page": 1, "total": 0},
        "a total no reader holds": {"items": [], "page": 1, "per_page": 1, "total": 10**30},
    }
    api: Any = _Unpaced(gateway)
    for page in pages.values():
        body = json.dumps(page).encode()
        async with raw_http(scripted(**{"/records": answer("200 OK", body)})) as partner:
            with pytest.raises(UpstreamDeserializeError):
                await fetch_page(api, a_partner(base_url=partner.base), "/records", PageRequest(1, 1), parse_record)


class _Unpaced:
    """What ``fetch_page`` needs of a ``PartnerApi``: the gateway, and no rate limit."""

    def __init__(self, gateway: HttpPartnerGateway) -> None:
        self.gateway = gateway

    async def pace(self, _partner: object) -> None:
        return None


def _chunked(status: str, size: int, chunk: bytes = b"x" * 65536) -> Script:
    """``size`` bytes in chunks, with no Content-Length: only reading tells how long it is."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    pieces: Script = [(head.encode(), 0.0)]
    pieces += [(b"%x\r\n" % len(chunk) + chunk + b"\r\n", 0.0) for _ in range(size // len(chunk))]
    return [*pieces, (b"0\r\n\r\n", 0.0)]


async def test_a_huge_answer_is_not_read_whole(gateway: HttpPartnerGateway) -> None:
    """httpx read a whole body into memory: 400 MB from a partner cost the process over a
    gigabyte. A send reads at most 64 KiB of its answer (it needs the status), a token grant
    64 KiB, a page of records 8 MiB; the rest is never read (the partner's write fails)."""
    big = 256 * 1024 * 1024
    script = scripted(**{"/transactions": _chunked("201 Created", big), "/records": _chunked("200 OK", big)})
    async with raw_http(script) as partner:
        sent = await _send(gateway, partner.base)
        with pytest.raises(UpstreamDeserializeError, match="longer than 8388608 bytes"):
            await gateway.get_json(a_partner(base_url=partner.base), "/records", {}, _pace)
        for _ in range(100):  # the partner's side notices the hang-up on its next writes
            if len(partner.written_whole) == 4:
                break
            await asyncio.sleep(0.05)
    assert classify(sent) is Verdict.SENT
    assert partner.written_whole[1::2] == [False, False]  # the two answers were cut short
    long_grant = answer("200 OK", b'{"access_token": "t", "pad": "' + b"x" * 100_000 + b'"}')
    async with raw_http(scripted(long_grant, **{"/transactions": answer("201 Created", b"{}")})) as partner:
        refused = await _send(gateway, partner.base)
    assert isinstance(refused, TransportFailure) and refused.at_token_endpoint and refused.kind == "protocol"


def _gzipped(data: bytes, layers: int) -> bytes:
    for _ in range(layers):
        data = gzip.compress(data)
    return data


async def test_a_compressed_answer_is_inflated_only_as_far_as_it_is_read(gateway: HttpPartnerGateway) -> None:
    """httpx inflated each raw chunk whole, every layer listed: 1,827 bytes gzipped twice
    inflated to a gigabyte before any cap ran. One layer of gzip or deflate is inflated here, as
    far as the cap; a send's verdict stands on its status whatever its body."""
    zeros = b"0" * (64 * 1024 * 1024)
    twice = _gzipped(zeros, 2)
    once = _gzipped(zeros, 1)
    script = scripted(
        **{
            "/transactions": answer("201 Created", twice, "Content-Encoding: gzip, gzip"),
            "/records": answer("200 OK", once, "Content-Encoding: gzip"),
            "/twice": answer("200 OK", twice, "Content-Encoding: gzip, gzip"),
            "/brotli": answer("200 OK", b"\x8b\x01\x80", "Content-Encoding: br"),
        }
    )
    async with raw_http(script) as partner:
        registered = a_partner(base_url=partner.base)
        sent = await gateway.send(registered, Delivery(uuid.uuid4(), {}), _pace)
        with pytest.raises(UpstreamDeserializeError, match="longer than 8388608 bytes"):
            await gateway.get_json(registered, "/records", {}, _pace)
        for path in ("/twice", "/brotli"):
            with pytest.raises(UpstreamError):
                await gateway.get_json(registered, path, {}, _pace)
    assert classify(sent) is Verdict.SENT


async def test_a_2xx_whose_body_is_slow_or_broken_is_sent(gateway: HttpPartnerGateway) -> None:
    """Once the status of a send's answer is in, the verdict is fixed: a body that drips,
    is cut short, or is not the gzip it says ended as a timeout or an error, which was retried
    (a duplicate POST for a payload the partner had accepted)."""
    head = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 20\r\nConnection: close\r\n\r\n"
    bodies: dict[str, Script] = {
        "drip": [(head, 0.0), *((b"x", 0.6) for _ in range(20))],
        "cut short": [(head + b"xx", 0.0)],
        "not gzip": answer("201 Created", b"plain text", "Content-Encoding: gzip"),
    }
    for why, body in bodies.items():
        async with raw_http(scripted(**{"/transactions": body})) as partner:
            result = await _send(gateway, partner.base)
        assert isinstance(result, PartnerAnswer) and result.status == 201, (why, result)
        assert classify(result) is Verdict.SENT, why


async def test_a_refusal_keeps_its_words_in_the_charset_it_names(gateway: HttpPartnerGateway) -> None:
    body = "Données invalides".encode("iso-8859-1")
    refusal = answer("400 Bad Request", body, content_type="text/plain; charset=iso-8859-1")
    async with raw_http(scripted(**{"/transactions": refusal})) as partner:
        result = await _send(gateway, partner.base)
    assert isinstance(result, PartnerAnswer) and result.detail == "Données invalides"
