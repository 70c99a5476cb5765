"""Litestar dependencies: the principal, the request-scoped unit of work, the container."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.di import NamedDependency, Provide
from litestar.params import SkipValidation

from craig.domain.access import Principal
from craig.entrypoints.container import Container
from craig.entrypoints.http import request_transaction
from craig.entrypoints.http.auth import principal_of
from craig.ports.unit_of_work import UnitOfWork


async def provide_container(request: Request[Any, Any, Any]) -> Container:
    container: Container = request.app.state.container
    return container


async def provide_principal(request: Request[Any, Any, Any]) -> Principal:
    return principal_of(request.scope.get("user"))


async def provide_uow(request: Request[Any, Any, Any]) -> UnitOfWork:
    """The request's transaction when the idempotency layer opened one, else a fresh unit of work."""
    bound = request_transaction.current()
    if bound is not None:
        return bound.uow
    uow: UnitOfWork = request.app.state.container.uow()
    return uow


#: Handler parameter types (Litestar 2.23+ style: dependencies are named explicitly). The unit of
#: work is a Protocol, which Litestar cannot isinstance-check, so its validation is skipped.
UoW = NamedDependency[SkipValidation[UnitOfWork]]
Me = NamedDependency[Principal]
AppContainer = NamedDependency[SkipValidation[Container]]

DEPENDENCIES = {
    "container": Provide(provide_container),
    "principal": Provide(provide_principal),
    "uow": Provide(provide_uow),
}
