"""The use cases route handlers declare, as Litestar dependencies built from the container.

A handler names the use case it runs as a typed parameter (``open_case: NamedDependency[OpenCase]``)
and never sees the container. Each use case is made per request with the request's unit of work:
the idempotency layer's open transaction when there is one, else a fresh unit of work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dependency_injector import providers
from litestar.di import Provide

from craig.entrypoints.container import Container
from craig.entrypoints.http.dependencies import request_unit_of_work
from craig.ports.unit_of_work import UnitOfWork

#: The per-request use cases, by the parameter name handlers declare them under; each is the
#: container provider of the same name.
PER_REQUEST = (
    "open_case",
    "get_case",
    "list_cases",
    "assign_worker",
    "record_contact",
    "get_contact",
    "list_contacts",
    "upload_attachment",
    "get_attachment",
    "list_attachments",
    "open_attachment",
    "create_foster_home",
    "get_foster_home",
    "list_foster_homes",
    "create_placement",
    "get_placement",
    "update_placement",
    "register_partner",
    "list_partners",
    "show_partner",
    "read_partner_records",
    "start_exchange_transaction",
    "get_exchange_transaction",
    "retry_send_job",
    "submit_referral",
    "create_rule_set",
    "get_rule_set",
    "list_rule_sets",
    "evaluate_rule_set",
    "list_audit_entries",
    "show_case_history",
    # casework
    "list_referrals",
    "get_referral",
    "screen_referral",
    "search_cases",
    "update_case",
    "close_case",
    "reopen_case",
    "unassign_worker",
    "list_case_placements",
    "update_foster_home",
    "list_foster_home_page",
    "list_home_placements",
    "list_contact_page",
    "list_attachment_page",
    "list_partner_page",
    "list_rule_set_page",
)


def _per_request(factory: providers.Provider[Any], new_unit_of_work: Callable[[], UnitOfWork]) -> Provide:
    # The unit of work is found here rather than declared as a dependency of its own: one
    # dependency fewer for Litestar to resolve (and validate) per use case and request.
    async def provide() -> Any:
        return factory(uow=request_unit_of_work(new_unit_of_work))

    return Provide(provide)


def use_case_dependencies(container: Container) -> dict[str, Provide]:
    """Every use case a route may declare, bound to ``container``."""
    new_unit_of_work: Callable[[], UnitOfWork] = container.uow
    return {name: _per_request(getattr(container, name), new_unit_of_work) for name in PER_REQUEST}
