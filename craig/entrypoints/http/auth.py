"""Bearer-JWT authentication for everything under ``/v1``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult, DefineMiddleware
from litestar.types import ASGIApp

from craig.domain.access import Principal
from craig.entrypoints.http import request_context
from craig.entrypoints.tokens import InvalidToken, TokenVerifier


class BearerAuthentication(AbstractAuthenticationMiddleware):
    """Sets ``request.user`` to the :class:`Principal`; 401 problem otherwise."""

    def __init__(self, app: ASGIApp, verify: Callable[[str], Awaitable[Principal]]) -> None:
        super().__init__(app)
        self.verify = verify

    async def authenticate_request(self, connection: ASGIConnection[Any, Any, Any, Any]) -> AuthenticationResult:
        header = connection.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthorizedException("send `Authorization: Bearer <JWT>`")
        try:
            principal = await self.verify(token.strip())
        except InvalidToken as error:
            raise NotAuthorizedException(str(error)) from None
        info = request_context.current()
        if info is not None:
            principal = attrs.evolve(principal, request_id=info.request_id, client_ip=info.client_ip)
        return AuthenticationResult(user=principal, auth=token)


def bearer_middleware(verifier: TokenVerifier) -> Any:
    """Litestar deep-copies middleware arguments. The JWKS key set must be one per process (a
    copy per route would fetch once per route and miss the keys fetched at startup), so the
    middleware gets a plain function, which copies by reference (a bound method would not)."""

    async def verify(token: str) -> Principal:
        return await verifier.authenticate(token)

    return DefineMiddleware(BearerAuthentication, verify=verify)


def principal_of(user: Any) -> Principal:
    if not isinstance(user, Principal):
        raise NotAuthorizedException("authentication required")
    return user
