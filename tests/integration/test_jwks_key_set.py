"""The JWKS key set against a real HTTP server on 127.0.0.1, on a clock the test turns: one
shared fetch per interval, and a bad answer never costs the keys already known."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest
import structlog

from craig.domain.constants import JWKS_MAX_BYTES
from craig.entrypoints.jwks import JwksKeySet
from tests.support.jwks import JwksServer, ec_key, jwk, jwks_server, rsa_key

pytestmark = pytest.mark.integration

KEY = rsa_key()
INTERVAL = timedelta(seconds=60)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def key_set(idp: JwksServer, clock: Clock) -> JwksKeySet:
    return JwksKeySet(idp.url, refresh_interval=INTERVAL, fetch_timeout=timedelta(seconds=30), clock=clock)


async def test_concurrent_unknown_kids_share_one_fetch_per_interval() -> None:
    with jwks_server([jwk(KEY, "a")]) as idp:
        clock = Clock()
        keys = key_set(idp, clock)
        try:
            assert await keys.key_for("a") is not None and idp.fetches == 1

            clock.now += 30  # within the interval: unknown kids are refused without a fetch
            found = await asyncio.gather(*(keys.key_for(f"x-{uuid.uuid4()}") for _ in range(50)))
            assert found == [None] * 50 and idp.fetches == 1

            clock.now += 31  # the interval has passed: fifty unknown kids at once, one fetch
            found = await asyncio.gather(*(keys.key_for(f"x-{uuid.uuid4()}") for _ in range(50)))
            assert found == [None] * 50 and idp.fetches == 2
            assert await keys.key_for("a") is not None and idp.fetches == 2
        finally:
            await keys.aclose()


async def test_a_known_kid_past_the_interval_answers_at_once_and_refreshes_in_the_background() -> None:
    with jwks_server([jwk(KEY, "a")]) as idp:
        clock = Clock()
        keys = key_set(idp, clock)
        try:
            await keys.refresh()
            idp.hold()
            clock.now += 61
            assert await keys.key_for("a") is not None  # while the background fetch hangs
            await idp.wait_held()
            idp.keys = [jwk(KEY, "b")]
            idp.release()
            for _ in range(600):
                if keys.kids == {"b"}:
                    break
                await asyncio.sleep(0.05)
            assert keys.kids == {"b"} and keys.key("a") is None  # the withdrawn key is gone
        finally:
            await keys.aclose()


def _set_with(*entries: dict[str, object]) -> bytes:
    return json.dumps({"keys": list(entries)}).encode()


BAD_ANSWERS = {
    "server error": (500, _set_with(jwk(KEY, "b"))),
    "not json": (200, b"<html>maintenance</html>"),
    "no keys list": (200, b'{"keys": "none"}'),
    "no usable key": (200, _set_with({"kty": "oct", "k": "c2VjcmV0", "kid": "b"}, {"kty": "RSA", "kid": "c"})),
    "encryption key only": (200, _set_with({**jwk(KEY, "b"), "use": "enc"})),
    "too large": (200, _set_with(jwk(KEY, "b"), *({"kid": str(n), "pad": "x" * 1000} for n in range(300)))),
}


@pytest.mark.parametrize("answer", BAD_ANSWERS)
async def test_a_bad_answer_keeps_the_known_keys(answer: str) -> None:
    status, body = BAD_ANSWERS[answer]
    assert answer != "too large" or len(body) > JWKS_MAX_BYTES
    with jwks_server([jwk(KEY, "a")]) as idp:
        clock = Clock()
        keys = key_set(idp, clock)
        try:
            await keys.refresh()
            idp.status, idp.body = status, body
            clock.now += 61
            with structlog.testing.capture_logs() as logs:
                assert await keys.key_for("b") is None
            assert idp.fetches == 2
            assert keys.kids == {"a"}
            assert [entry["event"] for entry in logs] == ["jwks refresh failed; keeping the known keys"]
        finally:
            await keys.aclose()


async def test_only_rs256_and_es256_signing_keys_with_a_kid_are_kept() -> None:
    curve = ec_key()
    entries = [
        jwk(KEY, "rsa"),
        jwk(curve, "ec"),
        {**jwk(KEY, "enc"), "use": "enc"},
        {**jwk(KEY, "x"), "kid": None},
        {**jwk(KEY, "rs384"), "alg": "RS384"},
        {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
        "not an object",
    ]
    with jwks_server([]) as idp:
        idp.body = json.dumps({"keys": entries}).encode()
        keys = key_set(idp, Clock())
        try:
            await keys.refresh()
            assert keys.kids == {"rsa", "ec"}
        finally:
            await keys.aclose()
