"""JWT verification and (dev) minting, shared by the HTTP layer and `craig token`.

Only the algorithms the configuration allows are accepted: HS256 with the shared secret, or
RS256/ES256 from a JWKS. ``alg: none`` and algorithm confusion (an HS256 token signed with a
public key) are therefore rejected. Signature, ``exp``, ``nbf``, ``iss`` and ``aud`` are checked.

Checking a token is synchronous and cheap (CPU only). With a JWKS, :meth:`TokenVerifier.authenticate`
first lets the key set fetch an unknown ``kid`` (:mod:`craig.entrypoints.jwks`: rate-limited,
shared, never holding up tokens whose key is known).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any
from uuid import UUID

import jwt
import jwt.types

from craig.domain.access import Principal, Role
from craig.entrypoints.jwks import ASYMMETRIC_ALGORITHMS, JwksKeySet
from craig.entrypoints.settings import AuthSettings


class InvalidToken(Exception):
    """The token is missing, malformed, expired, or not ours. The message is safe to show."""


def key_set_for(settings: AuthSettings) -> JwksKeySet | None:
    if not settings.jwks_url:
        return None
    return JwksKeySet(
        settings.jwks_url,
        refresh_interval=timedelta(seconds=settings.jwks_refresh_seconds),
        fetch_timeout=timedelta(seconds=settings.jwks_fetch_timeout_seconds),
    )


class TokenVerifier:
    def __init__(self, settings: AuthSettings, key_set: JwksKeySet | None = None) -> None:
        self._settings = settings
        self._jwks = key_set if key_set is not None else key_set_for(settings)

    @property
    def uses_jwks(self) -> bool:
        return self._jwks is not None

    def start(self) -> None:
        """With a JWKS, begin fetching it in the background (at startup)."""
        if self._jwks is not None:
            self._jwks.start()

    async def aclose(self) -> None:
        if self._jwks is not None:
            await self._jwks.aclose()

    async def authenticate(self, token: str) -> Principal:
        """:meth:`verify`, after the key set had its chance to learn the token's ``kid``."""
        if self._jwks is not None:
            kid = self._asymmetric_kid(self._header(token))
            await self._jwks.key_for(kid)
        return self.verify(token)

    def verify(self, token: str) -> Principal:
        """The token's principal, or :class:`InvalidToken`. Never does I/O: with a JWKS, only
        the keys already fetched count."""
        options: jwt.types.Options = {"require": ["exp", "iss", "aud", "sub"]}
        header = self._header(token)
        try:
            if self._jwks is not None:
                jwk = self._jwks.key(self._asymmetric_kid(header))
                if jwk is None:
                    raise InvalidToken("token signing key unknown")
                key: Any = jwk.key
                algorithms = [jwk.algorithm_name]  # the key's own algorithm: no confusion
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
        except jwt.InvalidTokenError as error:
            raise InvalidToken(f"invalid token: {error}") from None
        return principal_from_claims(claims)

    @staticmethod
    def _header(token: str) -> dict[str, Any]:
        try:
            return jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as error:
            raise InvalidToken(f"invalid token: {error}") from None

    @staticmethod
    def _asymmetric_kid(header: dict[str, Any]) -> str:
        if header.get("alg") not in ASYMMETRIC_ALGORITHMS:
            raise InvalidToken("token algorithm not allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("token has no `kid` header")
        return kid


def principal_from_claims(claims: dict[str, Any]) -> Principal:
    try:
        sub = UUID(str(claims["sub"]))
    except ValueError:
        raise InvalidToken("claim `sub` must be a UUID") from None
    try:
        role = Role(str(claims.get("role", "")))
    except ValueError:
        raise InvalidToken("claim `role` must be caseworker, screener, supervisor or admin") from None
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
