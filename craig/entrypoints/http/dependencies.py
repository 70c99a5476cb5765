"""Litestar dependencies every route may declare: the principal, the request's unit of work and
the client's address. The use cases routes declare are in :mod:`craig.entrypoints.http.use_cases`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request
from litestar.di import NamedDependency, Provide
from litestar.params import SkipValidation

from craig.domain.access import Principal
from craig.entrypoints.http import request_transaction
from craig.entrypoints.http.auth import principal_of
from craig.entrypoints.http.client_limits import request_client_ip
from craig.entrypoints.http.cursors import Cursors
from craig.ports.cipher import FieldCipher
from craig.ports.unit_of_work import UnitOfWork


async def provide_principal(request: Request[Any, Any, Any]) -> Principal:
    return principal_of(request.scope.get("user"))


def request_unit_of_work(new_unit_of_work: Callable[[], UnitOfWork]) -> UnitOfWork:
    """The request's transaction when the idempotency layer opened one, else a fresh unit of work."""
    bound = request_transaction.current()
    return bound.uow if bound is not None else new_unit_of_work()


def unit_of_work_dependency(new_unit_of_work: Callable[[], UnitOfWork]) -> Provide:
    """:func:`request_unit_of_work` for a route that declares ``uow: UoW`` itself."""

    async def provide_uow() -> UnitOfWork:
        return request_unit_of_work(new_unit_of_work)

    return Provide(provide_uow)


def client_address_dependency(trusted_proxies: str) -> Provide:
    """The client's IP address (``X-Forwarded-For`` only from a trusted proxy), or None."""

    async def provide_client_address(request: Request[Any, Any, Any]) -> str | None:
        return request_client_ip(request.scope, trusted_proxies)

    return Provide(provide_client_address)


def cursors_dependency(cipher: Callable[[], FieldCipher]) -> Provide:
    """The cursor codec of keyset lists (its MAC key comes from the field key ring)."""

    async def provide_cursors() -> Cursors:
        return Cursors(cipher())

    return Provide(provide_cursors)


#: Handler parameter types (Litestar 2.23+ style: dependencies are named explicitly). The unit of
#: work is a Protocol, which Litestar cannot isinstance-check, so its validation is skipped.
UoW = NamedDependency[SkipValidation[UnitOfWork]]
Me = NamedDependency[Principal]
ClientAddress = NamedDependency[str | None]
Paging = NamedDependency[Cursors]

DEPENDENCIES = {"principal": Provide(provide_principal)}
