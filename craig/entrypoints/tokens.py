"""JWT verification and (dev) minting, shared by the HTTP layer and `craig token`.

Only the algorithms the configuration allows are accepted: HS256 with the shared secret, or
RS256/ES256 from a JWKS. ``alg: none`` and algorithm confusion (an HS256 token signed with a
public key) are therefore rejected. Signature, ``exp``, ``nbf``, ``iss`` and ``aud`` are checked.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

import jwt

from craig.domain.access import Principal, Role
from craig.entrypoints.settings import AuthSettings

ASYMMETRIC_ALGORITHMS = ["RS256", "ES256"]


class InvalidToken(Exception):
    """The token is missing, malformed, expired, or not ours. The message is safe to show."""


class TokenVerifier:
    def __init__(self, settings: AuthSettings) -> None:
        self._settings = settings
        self._jwks = jwt.PyJWKClient(settings.jwks_url, cache_keys=True) if settings.jwks_url else None

    @property
    def uses_jwks(self) -> bool:
        return self._jwks is not None

    def verify(self, token: str) -> Principal:
        options = {"require": ["exp", "iss", "aud", "sub"]}
        try:
            header = jwt.get_unverified_header(token)
            if self._jwks is not None:
                if header.get("alg") not in ASYMMETRIC_ALGORITHMS:
                    raise InvalidToken("token algorithm not allowed")
                key: Any = self._jwks.get_signing_key_from_jwt(token).key
                algorithms = ASYMMETRIC_ALGORITHMS
            else:
                if header.get("alg") != "HS256":
                    raise InvalidToken("token algorithm not allowed")
                key = self._settings.jwt_secret
                algorithms = ["HS256"]
            claims = jwt.decode(
                token,
                key,
                algorithms=algorithms,
                audience=self._settings.audience,
                issuer=self._settings.issuer,
                leeway=self._settings.leeway_seconds,
                options=options,
            )
        except InvalidToken:
            raise
        except jwt.ExpiredSignatureError:
            raise InvalidToken("token expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("token not yet valid") from None
        except jwt.PyJWKClientError:
            raise InvalidToken("token signing key unknown") from None
        except jwt.InvalidTokenError as error:
            raise InvalidToken(f"invalid token: {error}") from None
        return principal_from_claims(claims)


def principal_from_claims(claims: dict[str, Any]) -> Principal:
    try:
        sub = UUID(str(claims["sub"]))
    except ValueError:
        raise InvalidToken("claim `sub` must be a UUID") from None
    try:
        role = Role(str(claims.get("role", "")))
    except ValueError:
        raise InvalidToken("claim `role` must be caseworker, supervisor or admin") from None
    name = claims.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidToken("claim `name` is required")
    return Principal(sub=sub, name=name.strip(), role=role)


def mint(settings: AuthSettings, *, sub: UUID, role: Role, name: str, ttl_seconds: int) -> str:
    """An HS256 token for development; refuses when the configuration uses a JWKS."""
    if settings.jwks_url:
        raise ValueError("CRAIG_AUTH__JWKS_URL is set: tokens come from your identity provider, not craig")
    if not settings.jwt_secret:
        raise ValueError("no HS256 secret configured (CRAIG_AUTH__JWT_SECRET)")
    now = int(time.time())
    claims = {
        "sub": str(sub),
        "name": name,
        "role": str(role),
        "iss": settings.issuer,
        "aud": settings.audience,
        "iat": now,
        "nbf": now,
        "exp": now + ttl_seconds,
    }
    return jwt.encode(claims, settings.jwt_secret, algorithm="HS256")
