"""Bearer-JWT authentication for everything under ``/v1``."""

from __future__ import annotations

from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult
from litestar.types import ASGIApp

from craig.domain.access import Principal
from craig.entrypoints.tokens import InvalidToken, TokenVerifier


class BearerAuthentication(AbstractAuthenticationMiddleware):
    """Sets ``request.user`` to the :class:`Principal`; 401 problem otherwise."""

    def __init__(self, app: ASGIApp, verifier: TokenVerifier) -> None:
        super().__init__(app)
        self.verifier = verifier

    async def authenticate_request(self, connection: ASGIConnection[Any, Any, Any, Any]) -> AuthenticationResult:
        header = connection.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthorizedException("send `Authorization: Bearer <JWT>`")
        try:
            principal = self.verifier.verify(token.strip())
        except InvalidToken as error:
            raise NotAuthorizedException(str(error)) from None
        return AuthenticationResult(user=principal, auth=token)


def bearer_middleware(verifier: TokenVerifier) -> Any:
    from litestar.middleware import DefineMiddleware

    return DefineMiddleware(BearerAuthentication, verifier=verifier)


def principal_of(user: Any) -> Principal:
    if not isinstance(user, Principal):
        raise NotAuthorizedException("authentication required")
    return user
