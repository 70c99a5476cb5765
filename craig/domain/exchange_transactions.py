"""An exchange transaction: one payload sent to several partners, one send job per partner."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.constants import EXCHANGE_MAX_PARTNERS_PER_TRANSACTION, EXCHANGE_MAX_PAYLOAD_BYTES
from craig.domain.errors import InvalidInput
from craig.domain.exchange import SendJob


class InvalidTransaction(InvalidInput):
    code = "invalid-exchange-transaction"


class UnknownPartners(InvalidInput):
    code = "unknown-partners"

    def __init__(self, partner_ids: Sequence[UUID]) -> None:
        super().__init__(f"no partner has the id(s) {', '.join(str(p) for p in partner_ids)}")
        self.problem_extra = {"unknown_partner_ids": [str(p) for p in partner_ids]}


@attrs.frozen(kw_only=True)
class ExchangeTransaction:
    id: UUID
    payload: Mapping[str, Any]
    created_by: UUID
    created_at: datetime


def can_see(transaction: ExchangeTransaction, principal: Principal) -> bool:
    """Its creator, supervisors and admins; others get a 404 so its existence does not leak."""
    return principal.sees_every_case or transaction.created_by == principal.sub


def check_request(partner_ids: Sequence[UUID], payload: Mapping[str, Any]) -> None:
    if not partner_ids:
        raise InvalidTransaction("partner_ids must name at least one partner")
    if len(partner_ids) > EXCHANGE_MAX_PARTNERS_PER_TRANSACTION:
        raise InvalidTransaction(f"partner_ids may name at most {EXCHANGE_MAX_PARTNERS_PER_TRANSACTION}")
    if len(set(partner_ids)) != len(partner_ids):
        raise InvalidTransaction("partner_ids must not repeat a partner")
    if len(json.dumps(payload, separators=(",", ":")).encode()) > EXCHANGE_MAX_PAYLOAD_BYTES:
        raise InvalidTransaction(f"payload must encode to at most {EXCHANGE_MAX_PAYLOAD_BYTES} bytes of JSON")


def new_transaction(
    *,
    id: UUID,
    partner_ids: Sequence[UUID],
    payload: Mapping[str, Any],
    created_by: UUID,
    job_ids: Sequence[UUID],
    correlation_ids: Sequence[UUID],
    now: datetime,
) -> tuple[ExchangeTransaction, list[SendJob]]:
    """The transaction and one ``pending`` job per partner, due at once."""
    check_request(partner_ids, payload)
    if not len(job_ids) == len(correlation_ids) == len(partner_ids):
        raise ValueError("one job id and one correlation id per partner")
    transaction = ExchangeTransaction(id=id, payload=dict(payload), created_by=created_by, created_at=now)
    jobs = [
        SendJob(
            id=job_id,
            transaction_id=id,
            partner_id=partner_id,
            correlation_id=correlation_id,
            payload=transaction.payload,
            next_attempt_at=now,
            created_at=now,
        )
        for partner_id, job_id, correlation_id in zip(partner_ids, job_ids, correlation_ids, strict=True)
    ]
    return transaction, jobs
