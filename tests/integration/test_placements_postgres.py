"""Placements on real PostgreSQL: a real deadlock retried inside the use case, the status
section operators read, and migration 0007 up, down and up again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from craig.adapters.clock import SystemClock
from craig.adapters.postgres.database import DriverConnection, PostgresDatabase
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.domain.access import Principal, Role
from craig.domain.cases import new_case
from craig.domain.placement_changes import NewPlacement, PlacementPatch
from craig.domain.placements import Placement, PlacementStatus
from craig.entrypoints.operations import collect_status, format_status
from craig.entrypoints.runtime import running
from craig.usecases.placements import CreateFosterHome, CreatePlacement, UpdatePlacement
from tests.support import apps
from tests.support.ciphers import TEST_CIPHER

pytestmark = pytest.mark.integration

SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[PostgresDatabase]:
    db = PostgresDatabase(pg_url)
    yield db
    await db.dispose()


async def active_placement(db: PostgresDatabase, capacity: int = 2) -> Placement:
    now = datetime.now(UTC)
    case = new_case(id=uuid.uuid4(), title="t", family_name=None, opened_at=now, created_by=SUPERVISOR.sub, now=now)
    uow = PostgresUnitOfWork(db, TEST_CIPHER)
    async with uow:
        await uow.cases.add(case)
        await uow.commit()
    home = await CreateFosterHome(uow, SystemClock())(SUPERVISOR, name="Home", capacity=capacity)
    command = NewPlacement.parse(case_id=case.id, foster_home_id=home.id, status="active", start_date=date.today())
    return await CreatePlacement(uow, SystemClock())(SUPERVISOR, command)


async def wait_until_someone_waits_for_a_lock(db: PostgresDatabase) -> None:
    async with db.connect() as conn:
        for _ in range(1000):
            sql = (
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            waiting = (await conn.execute(text(sql))).scalar_one()
            if waiting:
                return
            await asyncio.sleep(0.01)
    raise AssertionError("nobody ever waited for a lock")


async def never_the_victim(rival: DriverConnection) -> None:
    """The rival's session looks for a deadlock only after a minute, so the use case's (after
    PostgreSQL's default second) always finds the cycle first and is the one aborted. Which of
    the two waited longest is not enough: on a busy machine the first waiter's check may run
    after the second's (seen in a full test run on two loaded cores)."""
    await rival.execute(text("SET LOCAL deadlock_timeout = '60s'"))


async def test_a_real_deadlock_is_retried_inside_the_use_case(database: PostgresDatabase) -> None:
    placement = await active_placement(database)
    assert placement.foster_home_id is not None
    end = PlacementPatch.parse(status="ended", end_reason="moved", foster_home_id=None)
    async with database.transaction() as rival:
        # The rival locks in the forbidden order: home first, then placement.
        await rival.execute(
            text("SELECT 1 FROM foster_homes WHERE id = :id FOR UPDATE"), {"id": placement.foster_home_id}
        )
        await never_the_victim(rival)
        ending = asyncio.create_task(
            UpdatePlacement(PostgresUnitOfWork(database, TEST_CIPHER), SystemClock())(SUPERVISOR, placement.id, end)
        )
        await wait_until_someone_waits_for_a_lock(database)  # the use case holds the placement
        # Closing the cycle: only the use case's session checks for a deadlock within the test's
        # time, so PostgreSQL aborts *its* transaction (40P01); this statement then gets the row.
        await rival.execute(text("SELECT 1 FROM placements WHERE id = :id FOR UPDATE"), {"id": placement.id})
    ended = await ending
    assert ended.status is PlacementStatus.ENDED
    uow = PostgresUnitOfWork(database, TEST_CIPHER)
    async with uow:
        home = await uow.foster_homes.get(placement.foster_home_id)
    assert home is not None and home.occupancy == 0


async def test_a_deadlock_never_reaches_the_client(pg_url: str, tmp_path: Path) -> None:
    async with apps.serving("postgres", tmp_path, pg_url) as (container, client):
        database = container.postgres()
        placement = await active_placement(database)
        headers = {**apps.auth(container, role=Role.SUPERVISOR), "Idempotency-Key": "end-it"}
        async with database.transaction() as rival:
            await rival.execute(
                text("SELECT 1 FROM foster_homes WHERE id = :id FOR UPDATE"), {"id": placement.foster_home_id}
            )
            await never_the_victim(rival)
            request = asyncio.create_task(
                client.patch(
                    f"/v1/placements/{placement.id}", json={"status": "ended", "end_reason": "other"}, headers=headers
                )
            )
            await wait_until_someone_waits_for_a_lock(database)
            await rival.execute(text("SELECT 1 FROM placements WHERE id = :id FOR UPDATE"), {"id": placement.id})
        response = await request  # the rival committed
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "ended"


async def test_status_shows_homes_at_capacity(pg_url: str, tmp_path: Path) -> None:
    container = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    async with running(container):
        db = container.postgres()
        for _ in range(2):
            await active_placement(db, capacity=1)
        await active_placement(db, capacity=2)
        report = await collect_status(container)
    section = report["placements"]
    assert (section["foster homes"], section["homes at capacity"]) == (3, 2)
    assert section["full homes"] == "Home (1/1), Home (1/1)"
    assert section["homes with occupancy drift"] == "none"
    assert "homes at capacity                2" in format_status(report)
