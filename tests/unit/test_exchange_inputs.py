"""Partners, transactions, partner pages and the GCRA slots: validation and parsing (pure)."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.domain.constants import DEFAULT_PARTNER_RATE_LIMIT_RPM, EXCHANGE_MAX_PARTNERS_PER_TRANSACTION
from craig.domain.exchange_transactions import InvalidTransaction, new_transaction
from craig.domain.partner_rate_limit import interval_for, reserve
from craig.domain.partner_records import parse_page, parse_record
from craig.domain.partners import InvalidPartner, new_partner

pytestmark = pytest.mark.unit
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def partner(**overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "id": uuid.uuid4(),
        "name": "County Health",
        "base_url": "https://partner.example/api",
        "token_url": "https://partner.example/oauth/token",
        "client_id": "craig",
        "client_secret": "s3cret",
        "rate_limit_rpm": None,
        "now": NOW,
        **overrides,
    }
    return new_partner(**fields)


def test_partner_defaults() -> None:
    p = partner()
    assert p.effective_rate_limit_rpm == DEFAULT_PARTNER_RATE_LIMIT_RPM == 60
    assert p.send_path == "/transactions" and p.records_path == "/records"
    assert p.url("/records") == "https://partner.example/api/records"
    assert "s3cret" not in repr(p)


@pytest.mark.parametrize(
    "overrides",
    [
        {"name": "  "},
        {"base_url": "ftp://partner.example"},
        {"base_url": "partner.example/api"},
        {"token_url": "https://partner.example/t?x=1"},
        {"client_id": ""},
        {"client_secret": ""},
        {"rate_limit_rpm": 0},
        {"rate_limit_rpm": 1_000_001},
        {"send_path": "transactions"},
        {"records_path": "/records?page=2"},
        # credentials in a URL would be shown to everyone who may list partners
        {"token_url": "https://cid:idp-password@idp.example/t"},
        {"base_url": "https://user@partner.example"},
        # a name goes into log lines and terminals
        {"name": "A\nB\x1b[31m"},
        {"client_id": "craig\r\nX-Injected: 1"},
        {"name": "Agency \u202eevil"},  # a bidi override reorders what a log line shows
    ],
)
def test_partner_rejects_bad_fields(overrides: dict[str, Any]) -> None:
    with pytest.raises(InvalidPartner):
        partner(**overrides)


def transaction(partner_ids: list[uuid.UUID], payload: dict[str, Any] | None = None) -> Any:
    return new_transaction(
        id=uuid.uuid4(),
        partner_ids=partner_ids,
        payload=payload if payload is not None else {"case": "x"},
        created_by=uuid.uuid4(),
        job_ids=[uuid.uuid4() for _ in partner_ids],
        correlation_ids=[uuid.uuid4() for _ in partner_ids],
        now=NOW,
    )


def test_one_pending_job_per_partner() -> None:
    ids = [uuid.uuid4(), uuid.uuid4()]
    tx, jobs = transaction(ids)
    assert [j.partner_id for j in jobs] == ids
    assert all(j.transaction_id == tx.id and j.status == "pending" and j.attempts == 0 for j in jobs)
    assert len({j.correlation_id for j in jobs}) == 2


@pytest.mark.parametrize(
    "ids",
    [
        [],
        [uuid.UUID(int=1), uuid.UUID(int=1)],
        [uuid.uuid4() for _ in range(EXCHANGE_MAX_PARTNERS_PER_TRANSACTION + 1)],
    ],
)
def test_transaction_rejects_bad_partner_lists(ids: list[uuid.UUID]) -> None:
    with pytest.raises(InvalidTransaction):
        transaction(ids)


def test_transaction_rejects_huge_payloads() -> None:
    with pytest.raises(InvalidTransaction):
        transaction([uuid.uuid4()], {"blob": "x" * 300_000})


def test_page_parses_into_typed_records() -> None:
    raw = {
        "items": [{"id": 7, "type": "placement", "updated_at": "2026-01-02T03:04:05+00:00", "data": {"a": 1}}],
        "page": 1,
        "per_page": 10,
        "total": 1,
    }
    page = parse_page(raw, parse_record)
    assert page.total == 1 and page.items[0].id == "7" and page.items[0].data == {"a": 1}
    assert page.items[0].updated_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"items": {}, "page": 1, "per_page": 1, "total": 0},
        {"items": [], "page": 0, "per_page": 1, "total": 0},
        {"items": [], "page": 1, "per_page": 1},
        {"items": [{"type": "x"}], "page": 1, "per_page": 1, "total": 1},
        {"items": [{"id": "1", "type": ""}], "page": 1, "per_page": 1, "total": 1},
        {"items": [{"id": "1", "type": "x", "updated_at": "yesterday"}], "page": 1, "per_page": 1, "total": 1},
        {"items": [{"id": "1", "type": "x", "data": []}], "page": 1, "per_page": 1, "total": 1},
        {"items": [], "page": True, "per_page": 1, "total": 0},
    ],
)
def test_pages_of_the_wrong_shape_are_refused(raw: Any) -> None:
    with pytest.raises(ValueError):
        parse_page(raw, parse_record)


def test_gcra_hands_out_consecutive_slots_within_max_wait() -> None:
    interval = interval_for(60)
    tat, slots = reserve(None, NOW, interval, 5, timedelta(seconds=2.5))
    assert [s.granted for s in slots] == [True, True, True, False, False]
    assert [s.wait.total_seconds() for s in slots] == [0, 1, 2, 3, 3]
    assert tat == NOW + timedelta(seconds=3)
    again, denied = reserve(tat, NOW, interval, 1, timedelta(seconds=2.5))
    assert again == tat and not denied[0].granted  # a denial consumes nothing


@given(
    rate=st.integers(min_value=1, max_value=6000),
    calls=st.lists(
        st.tuples(st.integers(min_value=0, max_value=5000), st.integers(min_value=1, max_value=10)), max_size=40
    ),
    max_wait_ms=st.integers(min_value=0, max_value=20_000),
)
def test_gcra_slots_never_come_closer_than_the_interval(
    rate: int, calls: list[tuple[int, int]], max_wait_ms: int
) -> None:
    interval = interval_for(rate)
    tat = None
    now = NOW
    slots: list[datetime] = []
    for step_ms, count in calls:
        now += timedelta(milliseconds=step_ms)
        tat, reservations = reserve(tat, now, interval, count, timedelta(milliseconds=max_wait_ms))
        assert len(reservations) == count
        granted = [r for r in reservations if r.granted]
        assert all(r.wait <= timedelta(milliseconds=max_wait_ms) for r in granted)
        slots += [now + r.wait for r in granted]
    gaps = [b - a for a, b in itertools.pairwise(slots)]
    assert all(gap >= interval - timedelta(microseconds=2) for gap in gaps)


@pytest.mark.parametrize(
    "name", ["Jugend\u00a0amt", "Mehr\u200cnegar", "Kinder\u00adschutz", "\U0001f468\u200d\U0001f469"]
)
def test_a_name_may_hold_the_spaces_and_joiners_real_names_need(name: str) -> None:
    assert partner(name=name).name == name
