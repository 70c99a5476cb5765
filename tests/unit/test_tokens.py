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
        (claims(exp=10**400), "exp"),  # beyond any float: was an OverflowError (500)
        (claims(exp="9" * 400), "exp"),  # a float of it is inf: would be remembered forever
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


# --- tokens verified once are remembered --------------------------------------------------------


class CountingDecode:
    def __init__(self) -> None:
        self.calls = 0
        self.real = jwt.decode

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.real(*args, **kwargs)


@pytest.fixture
def decode(monkeypatch: pytest.MonkeyPatch) -> CountingDecode:
    counting = CountingDecode()
    monkeypatch.setattr(jwt, "decode", counting)
    return counting


def test_a_verified_token_is_accepted_again_without_checking_its_signature(decode: CountingDecode) -> None:
    verifier = TokenVerifier(SETTINGS)
    token = hs256(claims())
    first, second = verifier.verify(token), verifier.verify(token)
    assert first == second and decode.calls == 1


def test_a_remembered_token_past_its_expiry_and_the_leeway_is_checked_again(decode: CountingDecode) -> None:
    now = [time.time()]
    verifier = TokenVerifier(SETTINGS, now=lambda: now[0])
    expires = int(now[0]) + 5
    token = hs256(claims(exp=expires))
    verifier.verify(token)
    now[0] = expires + SETTINGS.leeway_seconds - 0.5
    verifier.verify(token)
    assert decode.calls == 1
    now[0] = expires + SETTINGS.leeway_seconds
    verifier.verify(token)  # checked again (jwt.decode still accepts it on the real clock)
    assert decode.calls == 2


def test_tokens_that_fail_are_never_remembered_and_the_memory_is_bounded(
    decode: CountingDecode, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = TokenVerifier(SETTINGS)
    bad = hs256(claims(), key="another-secret-that-is-also-32-bytes-long")
    for _ in range(2):
        with pytest.raises(InvalidToken):
            verifier.verify(bad)
    assert decode.calls == 2
    monkeypatch.setattr("craig.entrypoints.tokens.JWT_VERIFIED_CACHE_SIZE", 3)
    tokens = [hs256(claims()) for _ in range(4)]
    for token in tokens:
        verifier.verify(token)
    decode.calls = 0
    verifier.verify(tokens[0])  # the oldest was forgotten
    verifier.verify(tokens[3])
    assert decode.calls == 1


def test_a_remembered_token_whose_key_was_withdrawn_is_refused() -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = jwt.PyJWK.from_dict(
        {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key())), "kid": "k1", "alg": "RS256"}
    )

    class KeySet:
        keys: dict[str, jwt.PyJWK] = {"k1": public}

        def key(self, kid: str) -> jwt.PyJWK | None:
            return self.keys.get(kid)

    key_set = KeySet()
    verifier = TokenVerifier(AuthSettings(jwks_url="http://127.0.0.1:9/jwks.json"), key_set)  # type: ignore[arg-type]
    token = jwt.encode(claims(), private, algorithm="RS256", headers={"kid": "k1"})
    assert verifier.verify(token).name == "Ann"
    key_set.keys = {}
    with pytest.raises(InvalidToken, match="signing key unknown"):
        verifier.verify(token)
