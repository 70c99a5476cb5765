"""Bearer-token verification: only the configured algorithm, every registered claim checked."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from craig.domain.access import Role
from craig.entrypoints.settings import AuthSettings
from craig.entrypoints.tokens import InvalidToken, TokenVerifier, mint

pytestmark = pytest.mark.unit

SECRET = "a-test-secret-that-is-at-least-32-bytes-long"
SETTINGS = AuthSettings(jwt_secret=SECRET)


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "sub": str(uuid.uuid4()),
        "name": "Ann",
        "role": "caseworker",
        "iss": "craig",
        "aud": "craig-api",
        "iat": now,
        "nbf": now,
        "exp": now + 600,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def hs256(payload: dict[str, Any], key: str = SECRET) -> str:
    return jwt.encode(payload, key, algorithm="HS256")


def test_a_minted_token_verifies_to_its_principal() -> None:
    sub = uuid.uuid4()
    principal = TokenVerifier(SETTINGS).verify(
        mint(SETTINGS, sub=sub, role=Role.SUPERVISOR, name="Sam", ttl_seconds=60)
    )
    assert (principal.sub, principal.name, principal.role) == (sub, "Sam", Role.SUPERVISOR)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (claims(exp=int(time.time()) - 3600), "expired"),
        (claims(nbf=int(time.time()) + 3600), "not yet valid"),
        (claims(iss="someone-else"), "issuer"),
        (claims(aud="another-api"), "audience"),
        (claims(exp=None), "exp"),
        (claims(sub="not-a-uuid"), "sub"),
        (claims(role="superuser"), "role"),
        (claims(name=None), "name"),
    ],
)
def test_bad_claims_are_refused(payload: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidToken):
        TokenVerifier(SETTINGS).verify(hs256(payload))


def test_a_wrong_signature_is_refused() -> None:
    with pytest.raises(InvalidToken):
        TokenVerifier(SETTINGS).verify(hs256(claims(), key="another-secret-that-is-also-32-bytes-long"))


def _unsigned(payload: dict[str, Any], alg: str) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': alg, 'typ': 'JWT'})}.{part(payload)}."


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_alg_none_is_refused(alg: str) -> None:
    with pytest.raises(InvalidToken):
        TokenVerifier(SETTINGS).verify(_unsigned(claims(), alg))


def test_an_rs256_token_is_refused_when_hs256_is_configured() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(InvalidToken):
        TokenVerifier(SETTINGS).verify(jwt.encode(claims(), key, algorithm="RS256"))


def test_algorithm_confusion_is_refused() -> None:
    """An HS256 token whose HMAC key is the server's public key must not verify under a JWKS."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    verifier = TokenVerifier(AuthSettings(jwks_url="http://127.0.0.1:9/jwks.json"))
    forged = _hmac_with(public_pem, claims())  # PyJWT itself refuses to sign with a PEM as HMAC key
    with pytest.raises(InvalidToken):
        verifier.verify(forged)


def _hmac_with(key: bytes, payload: dict[str, Any]) -> str:
    import hashlib
    import hmac

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = f"{part(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())}.{part(json.dumps(payload).encode())}"
    signature = hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{part(signature)}"


def test_mint_refuses_when_a_jwks_is_configured() -> None:
    with pytest.raises(ValueError, match="JWKS"):
        mint(
            AuthSettings(jwks_url="https://idp.example/jwks.json"),
            sub=uuid.uuid4(),
            role=Role.ADMIN,
            name="A",
            ttl_seconds=60,
        )
