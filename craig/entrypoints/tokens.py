"""JWT verification and (dev) minting, shared by the HTTP layer and `craig token`.

Only the algorithms the configuration allows are accepted: HS256 with the shared secret, or
RS256/ES256 from a JWKS. ``alg: none`` and algorithm confusion (an HS256 token signed with a
public key) are therefore rejected. Signature, ``exp``, ``nbf``, ``iss`` and ``aud`` are checked.

Checking a token is synchronous and cheap (CPU only). With a JWKS, :meth:`TokenVerifier.authenticate`
first lets the key set fetch an unknown ``kid`` (:mod:`craig.entrypoints.jwks`: rate-limited,
shared, never holding up tokens whose key is known).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import UUID

import attrs
import jwt
import jwt.types

from craig.domain.access import Principal, Role
from craig.domain.constants import JWT_VERIFIED_CACHE_SIZE
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


@attrs.frozen
class _Verified:
    principal: Principal
    #: Unix time from which it is expired (``exp`` plus the leeway).
    expires: float
    kid: str | None
    key: object


class TokenVerifier:
    """Verifies tokens, and remembers the last :data:`JWT_VERIFIED_CACHE_SIZE` it verified: a
    remembered token is accepted again without checking its signature while it is unexpired
    (``exp`` plus the leeway, on ``now``) and, with a JWKS, while the key that signed it is still
    the key set's key for its ``kid``. Only tokens that passed every check are remembered."""

    def __init__(
        self, settings: AuthSettings, key_set: JwksKeySet | None = None, *, now: Callable[[], float] = time.time
    ) -> None:
        self._settings = settings
        self._jwks = key_set if key_set is not None else key_set_for(settings)
        self._now = now
        self._verified: OrderedDict[str, _Verified] = OrderedDict()

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
        known = self._verified.get(token)
        if known is not None:
            if self._now() < known.expires and self._key_in_force(known):
                self._verified.move_to_end(token)
                return known.principal
            del self._verified[token]
        return self._check(token)

    def _key_in_force(self, known: _Verified) -> bool:
        if self._jwks is None:
            return known.key is self._settings.jwt_secret
        jwk = self._jwks.key(known.kid) if known.kid is not None else None
        return jwk is not None and jwk.key is known.key

    def _remember(self, token: str, verified: _Verified) -> None:
        self._verified[token] = verified
        if len(self._verified) > JWT_VERIFIED_CACHE_SIZE:
            self._verified.popitem(last=False)

    def _check(self, token: str) -> Principal:
        kid: str | None = None
        options: jwt.types.Options = {"require": ["exp", "iss", "aud", "sub"]}
        header = self._header(token)
        try:
            if self._jwks is not None:
                kid = self._asymmetric_kid(header)
                jwk = self._jwks.key(kid)
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
        principal = principal_from_claims(claims)
        try:
            expires = float(claims["exp"]) + self._settings.leeway_seconds
        except OverflowError:  # an integer beyond any float, e.g. 10**400
            expires = math.inf
        except (TypeError, ValueError):  # PyJWT checked it is a number; never remember otherwise
            return principal
        if not math.isfinite(expires):
            # PyJWT compares ``exp`` as an integer, so ``10**400`` (or a 400-digit string) passed
            # its check; no token lives that long. Refused like any other bad ``exp``.
            raise InvalidToken("invalid token: Expiration Time claim (exp) is out of range")
        self._remember(token, _Verified(principal, expires, kid, key))
        return principal

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
