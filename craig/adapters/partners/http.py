"""The partner gateway over httpx: OAuth2 client credentials, correlation ids, timeouts, limits.

``send`` never raises for what a partner answers or for a transport fault: they are the
:class:`~craig.domain.exchange.DispatchResult` the domain classifies. ``get_json`` raises
:class:`~craig.ports.exchange.UpstreamError` instead. A partner URL httpx cannot request (one
stored before the domain refused it) is neither: it is checked before any request, and fails the
request the same way, as a ``protocol`` failure, never as an exception of httpx or ``idna``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import re
import time
import zlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from craig.adapters.partners.tokens import TokenCache, TokenGrant, TokenUnavailable
from craig.adapters.telemetry import TRACEPARENT, SpanKind, span
from craig.domain.constants import (
    PARTNER_ERROR_DETAIL_MAX_CHARS,
    PARTNER_POOL_WAIT,
    PARTNER_RECORDS_MAX_BYTES,
    PARTNER_SEND_ANSWER_MAX_BYTES,
    PARTNER_TOKEN_ANSWER_MAX_BYTES,
    PARTNER_TOKEN_DEFAULT_LIFETIME,
    PARTNER_TOKEN_MAX_LIFETIME,
    PARTNER_TOKEN_SEND_SHARE,
    TOKEN_REFRESH_LEAD_TIME,
)
from craig.domain.exchange import DispatchResult, PartnerAnswer, TransportFailure, describe
from craig.domain.partners import Partner
from craig.ports.exchange import Delivery, Pace, PartnerGateway, UpstreamDeserializeError, UpstreamError

CORRELATION_HEADER = "X-Correlation-ID"
#: A token that can go in a header as it is: printable ASCII without spaces (RFC 6750's b64token
#: and every opaque token in use fit).
_BEARER_TOKEN = re.compile(r"[\x21-\x7e]+")
#: The request that made the job (not the job's own id, which is ``X-Correlation-ID``).
REQUEST_ID_HEADER = "X-Request-ID"


#: delta-seconds as RFC 9110 writes them: ASCII digits (``str.isdigit`` also takes "²"), and
#: few enough that a timedelta holds them (the domain caps the wait far below anyway).
_DELTA_SECONDS = re.compile(r"[0-9]{1,9}")


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    """``Retry-After`` as delta-seconds or an HTTP date; None when absent or unparsable. Never
    raises, whatever the partner wrote: an exception here once turned a partner's 2xx into a
    crash of the dispatch, which was retried (a duplicate) and finally failed."""
    if not value:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return timedelta(seconds=int(value))
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(timedelta(0), when - now)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


def _decoded(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", "replace")
    except (LookupError, TypeError, ValueError):  # unknown, or no text encoding (rot13)
        return data.decode("utf-8", "replace")


def _answer(response: httpx.Response, *, at_token_endpoint: bool = False) -> PartnerAnswer:
    # Decoded from the first bytes only, in the charset the answer names (UTF-8 when it names
    # none, or one Python does not know).
    head = _decoded(response.content[: PARTNER_ERROR_DETAIL_MAX_CHARS * 4], response.charset_encoding)
    snippet = " ".join(head[:PARTNER_ERROR_DETAIL_MAX_CHARS].split())
    # A wait means something only with a refusal: a 2xx is sent, whatever else it carries.
    retry_after = None if response.is_success else response.headers.get("retry-after")
    return PartnerAnswer(
        status=response.status_code,
        retry_after=parse_retry_after(retry_after, datetime.now(UTC)),
        detail=snippet,
        at_token_endpoint=at_token_endpoint,
    )


def _transport(error: httpx.HTTPError, *, at_token_endpoint: bool = False) -> TransportFailure:
    """Only the exception's class: its message may quote what the peer sent (a malformed status
    line, a header), and the result ends up in a job's ``last_error``."""
    kind = "timeout" if isinstance(error, httpx.TimeoutException) else "connection"
    return TransportFailure(kind, type(error).__name__, at_token_endpoint=at_token_endpoint)


#: The largest TCP port; httpx parses a larger one and only the connect fails, with an error
#: that is none of its own.
_MAX_PORT = 65535


@functools.lru_cache(maxsize=1024)
def _unusable(url: str) -> str | None:
    """Why httpx cannot request ``url`` (an exception's class, never the URL), or None.

    httpx parses a URL when a request is made and raises :class:`httpx.InvalidURL` (not an
    :class:`httpx.HTTPError`) for an unclosed IPv6 bracket or a host IDNA cannot encode; an
    ``xn--`` host that does not decode raises ``idna``'s errors (``UnicodeError``) only when the
    host is read; a port out of range fails in the connect."""
    try:
        parsed = httpx.URL(url)
        _ = parsed.host  # decodes an ``xn--`` host
        port = parsed.port
    except (httpx.InvalidURL, ValueError) as error:  # UnicodeError is a ValueError
        return type(error).__name__
    if port is not None and not 0 <= port <= _MAX_PORT:
        return "port out of range"
    return None


#: Hop-by-hop and encoding headers of an answer read here: its body is kept decoded.
_NOT_KEPT = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})
#: The codings a body may come in (one at most): each is undone here, bounded.
_ZLIB_WINDOWS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _Undecodable(Exception):
    """The body came in a coding that is not undone here (several layers, or another coding)."""


async def _read_capped(streamed: httpx.Response, cap: int) -> bytes:
    """At most ``cap + 1`` bytes of the body, decoded. Decoding is bounded here too: httpx
    would inflate each raw chunk whole, and a 2 KB answer gzipped twice inflates to a gigabyte."""
    coding = streamed.headers.get("content-encoding", "identity").strip().lower()
    if coding in ("", "identity"):
        inflate = None
    elif coding in _ZLIB_WINDOWS:
        inflate = zlib.decompressobj(_ZLIB_WINDOWS[coding])
    else:
        raise _Undecodable(coding)
    body = bytearray()
    async for raw in streamed.aiter_raw():
        if inflate is None:
            body += raw
        else:
            body += inflate.decompress(raw, cap + 1 - len(body))
        if len(body) > cap:
            break
    return bytes(body[: cap + 1])


async def _fetch(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    cap: int,
    timeout: httpx.Timeout,
    *,
    status_decides: bool = False,
    **options: Any,
) -> httpx.Response:
    """The answer with at most ``cap + 1`` bytes of its body, decoded (so ``len(content) > cap``
    says it was longer). httpx read a whole body into memory, and a partner that answered
    hundreds of megabytes cost the process gigabytes.

    The whole exchange takes at most its timeouts added up, as a read timeout beyond: httpx's
    read timeout is per read, and a partner that sends its answer a byte every few seconds held
    a case worker's request (and the partner's token lock) as long as it liked.

    ``status_decides`` (a send): once the status is in, the verdict is fixed. The body is read
    for a snippet only, for at most one read timeout, and a body that is slow, cut short or
    undecodable leaves the snippet short instead of turning a 2xx into a timeout (retried: a
    duplicate POST)."""
    auth = options.pop("auth", None)
    # Only the codings undone here (httpx would also offer br or zstd when their libraries are there).
    options["headers"] = {"Accept-Encoding": "gzip, deflate", **options.get("headers", {})}
    request = client.build_request(method, url, timeout=timeout, **options)
    limit = sum(t for t in (timeout.pool, timeout.connect, timeout.read, timeout.write) if t is not None)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    try:
        async with asyncio.timeout_at(deadline):
            streamed = await (
                client.send(request, auth=auth, stream=True) if auth else client.send(request, stream=True)
            )
    except TimeoutError:
        raise httpx.ReadTimeout(f"the exchange took longer than {limit:g} s", request=request) from None
    try:
        if status_decides:
            deadline = min(deadline, loop.time() + (timeout.read or 0))
        try:
            async with asyncio.timeout_at(deadline):
                body = await _read_capped(streamed, cap)
        except (TimeoutError, httpx.HTTPError, _Undecodable, zlib.error) as error:
            if not status_decides:
                if isinstance(error, TimeoutError):
                    raise httpx.ReadTimeout(f"the exchange took longer than {limit:g} s", request=request) from None
                if isinstance(error, _Undecodable | zlib.error):
                    raise httpx.DecodingError(f"a body in a coding not read here: {error}", request=request) from None
                raise
            body = b""
    finally:
        await streamed.aclose()
    headers = [(name, value) for name, value in streamed.headers.raw if name.lower() not in _NOT_KEPT]  # as sent
    return httpx.Response(streamed.status_code, headers=headers, content=body, request=request)


def _bad_url(why: str, *, at_token_endpoint: bool = False) -> TransportFailure:
    return TransportFailure("protocol", f"unusable URL, {why}", at_token_endpoint=at_token_endpoint)


class HttpPartnerGateway(PartnerGateway):
    def __init__(
        self,
        *,
        connect_timeout_seconds: float,
        read_timeout_seconds: float,
        max_connections: int,
        token_refresh_lead: timedelta = TOKEN_REFRESH_LEAD_TIME,
        monotonic: Callable[[], float] = time.monotonic,
        on_token_refresh: Callable[[], None] | None = None,
        pool_wait: timedelta = PARTNER_POOL_WAIT,
    ) -> None:
        self._read = read_timeout_seconds
        self._connect = connect_timeout_seconds
        self._pool_wait = pool_wait.total_seconds()
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(read_timeout_seconds, connect=connect_timeout_seconds, pool=self._pool_wait),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            follow_redirects=False,
            trust_env=False,
        )
        self.tokens = TokenCache(self._fetch_token, token_refresh_lead, monotonic, on_token_refresh)

    async def _fetch_token(self, partner: Partner) -> TokenGrant:
        unusable = _unusable(partner.token_url)
        if unusable is not None:
            raise TokenUnavailable(_bad_url(unusable, at_token_endpoint=True))
        try:
            response = await _fetch(
                self._client,
                "POST",
                partner.token_url,
                PARTNER_TOKEN_ANSWER_MAX_BYTES,
                self._client.timeout,
                data={"grant_type": "client_credentials"},
                auth=(partner.client_id, partner.client_secret),
                headers={"Accept": "application/json"},
            )
        except httpx.HTTPError as error:
            raise TokenUnavailable(_transport(error, at_token_endpoint=True)) from error
        except httpx.InvalidURL as error:
            raise TokenUnavailable(_bad_url(type(error).__name__, at_token_endpoint=True)) from error
        if not response.is_success:
            raise TokenUnavailable(_answer(response, at_token_endpoint=True))
        if len(response.content) > PARTNER_TOKEN_ANSWER_MAX_BYTES:
            too_long = TransportFailure("protocol", "bad body, too long", at_token_endpoint=True)
            raise TokenUnavailable(too_long)
        try:
            body = response.json()
            token = body["access_token"]
            token_type = str(body.get("token_type", "bearer")).lower()
            expires_in = body.get("expires_in", PARTNER_TOKEN_DEFAULT_LIFETIME.total_seconds())
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
            bad_body = f"bad body, {type(error).__name__}"
            raise TokenUnavailable(TransportFailure("protocol", bad_body, at_token_endpoint=True)) from error
        longest = PARTNER_TOKEN_MAX_LIFETIME.total_seconds()
        if isinstance(expires_in, int) and not isinstance(expires_in, bool) and expires_in > longest:
            expires_in = longest  # before any float(): an integer of 400 digits is no float
        usable = (
            isinstance(token, str)
            and _BEARER_TOKEN.fullmatch(token) is not None
            and token_type == "bearer"
            and isinstance(expires_in, int | float)
            and not isinstance(expires_in, bool)
            and math.isfinite(expires_in)
            and expires_in > 0
        )
        if not usable:
            # A token httpx cannot put in a header (not printable ASCII) would fail every request
            # of the partner until it expired; a lifetime that is not a positive number no
            # timedelta holds.
            not_bearer = TransportFailure("protocol", "not a bearer token grant", at_token_endpoint=True)
            raise TokenUnavailable(not_bearer)
        lifetime = min(float(expires_in), longest)
        return TokenGrant(token, timedelta(seconds=lifetime))

    def _timeout(self, partner: Partner) -> httpx.Timeout:
        """The timeouts of a request about to carry the partner's token, just checked: the wait
        for a pooled connection and the connect together stay within ``PARTNER_TOKEN_SEND_SHARE``
        of the time the token has left, so the request starts before the token expires."""
        budget = self.tokens.valid_for(partner) * PARTNER_TOKEN_SEND_SHARE
        pool = min(self._pool_wait, budget / 2)
        return httpx.Timeout(self._read, connect=min(self._connect, budget - pool), pool=pool)

    async def _authorized(
        self, partner: Partner, pace: Pace, request: Callable[[str, httpx.Timeout], Any]
    ) -> httpx.Response:
        """One request with the cached token; on 401, one refresh and one retry.

        The token is fetched before the rate-limit wait, so the wait hides a refresh, and looked
        at again when the wait is over: a token that expired (or came within the refresh lead
        of expiring) while waiting is refreshed before it is sent. Between that look and the
        request going out there is only the wait for a pooled connection and the connect, both
        bounded by :meth:`_timeout` (a pool held busy longer ends the request as a timeout)."""
        await self.tokens.token(partner)
        await pace()
        token = await self.tokens.token(partner)
        response: httpx.Response = await request(token, self._timeout(partner))
        if response.status_code == 401:
            await self.tokens.replace(partner, token)
            await pace()
            token = await self.tokens.token(partner)
            response = await request(token, self._timeout(partner))
        return response

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        """POST the job's payload. Besides the job's ``X-Correlation-ID`` (the partner's dedupe
        key, the same on every retry), the POST carries the ``X-Request-ID`` of the request that
        made the job and a W3C ``traceparent``: the POST's own span (``partner POST``) when
        tracing is on, else the context the job was made in."""
        url = partner.url(partner.send_path)
        unusable = _unusable(url)
        if unusable is not None:
            return _bad_url(unusable)
        body = json.dumps(dict(delivery.payload), separators=(",", ":")).encode()

        async def post(token: str, timeout: httpx.Timeout) -> httpx.Response:
            attributes = {"http.request.method": "POST", "url.full": url, "craig.partner.id": str(partner.id)}
            with span("partner POST", kind=SpanKind.CLIENT, attributes=attributes) as call:
                headers = {
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    CORRELATION_HEADER: str(delivery.correlation_id),
                    # this call's span when tracing is on, else the context the job was made in
                    **(call.headers or ({TRACEPARENT: delivery.traceparent} if delivery.traceparent else {})),
                }
                if delivery.origin_request_id:
                    headers[REQUEST_ID_HEADER] = delivery.origin_request_id
                response = await _fetch(
                    self._client,
                    "POST",
                    url,
                    PARTNER_SEND_ANSWER_MAX_BYTES,
                    timeout,
                    status_decides=True,
                    content=body,
                    headers=headers,
                )
                call.set("http.response.status_code", response.status_code)
                if response.status_code >= 400:
                    call.failed(f"the partner answered {response.status_code}")
                return response

        try:
            response = await self._authorized(partner, pace, post)
        except TokenUnavailable as failure:
            return failure.result
        except httpx.HTTPError as error:
            return _transport(error)
        except httpx.InvalidURL as error:
            return _bad_url(type(error).__name__)
        return _answer(response)

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        url = partner.url(path)
        unusable = _unusable(url)
        if unusable is not None:
            raise UpstreamError(path, describe(_bad_url(unusable)))

        async def get(token: str, timeout: httpx.Timeout) -> httpx.Response:
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
            return await _fetch(
                self._client, "GET", url, PARTNER_RECORDS_MAX_BYTES, timeout, params=dict(params), headers=headers
            )

        try:
            response = await self._authorized(partner, pace, get)
        except TokenUnavailable as failure:
            raise UpstreamError(path, describe(failure.result)) from failure
        except httpx.HTTPError as error:
            raise UpstreamError.upstream(path, describe(_transport(error))) from error
        except httpx.InvalidURL as error:
            raise UpstreamError(path, describe(_bad_url(type(error).__name__))) from error
        if not response.is_success:
            raise UpstreamError(path, describe(_answer(response)))
        if len(response.content) > PARTNER_RECORDS_MAX_BYTES:
            raise UpstreamDeserializeError(path, f"the body is longer than {PARTNER_RECORDS_MAX_BYTES} bytes")
        try:
            return response.json()
        except ValueError as error:
            raise UpstreamDeserializeError(path, f"the body is not JSON: {error}") from error
        except RecursionError as error:
            raise UpstreamDeserializeError(path, "the body is JSON nested too deeply to read") from error

    async def aclose(self) -> None:
        await self._client.aclose()
