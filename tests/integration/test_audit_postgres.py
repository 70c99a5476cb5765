"""The audit trail on real PostgreSQL: append-only tables whoever asks, tampering caught by
``craig audit verify`` even with the triggers switched off, appends that never wait on each
other, late entries sealed, concurrent sealers that do not fork, and purges that keep the chain
verifiable."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, timedelta
from pathlib import Path

import asyncpg
import attrs
import pytest
from sqlalchemy import text

from craig.adapters.postgres import migrations
from craig.adapters.postgres.audit_chain import PostgresAuditChainStore
from craig.adapters.postgres.database import PostgresDatabase
from craig.domain.audit import AuditEntry, chain_hash
from craig.domain.audit_chain import ExpectedHead
from craig.domain.audit_verify import verify_chain
from craig.entrypoints.cli import audit as audit_cli
from craig.entrypoints.container import Container
from craig.ports.errors import PortError
from tests.support import apps
from tests.support.audit import entry, record, superuser
from tests.support.services import public_tables, scratch_database

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

AUDIT_TABLES = ["audit_entries", "audit_chain", "audit_purges", "audit_retention"]


@pytest.fixture
async def container(tmp_path: Path, pg_url: str) -> AsyncIterator[Container]:
    made = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    yield made
    await made.postgres().dispose()


async def sealed_chain(container: Container, n: int = 5) -> list[AuditEntry]:
    stored = []
    for k in range(n):
        stored += await record(container.uow(), entry("update", case_id=uuid.uuid4(), changed_fields=[f"f{k}"]))
    await container.audit.seal()()
    return stored


async def verify(container: Container, capsys: pytest.CaptureFixture[str], head: str | None = None) -> tuple[int, str]:
    expected = ExpectedHead.parse(head) if head else None
    code = await audit_cli.verify(container, expected)
    return code, capsys.readouterr().out


async def tamper(url: str, *statements: str) -> None:
    """As the superuser, with every audit trigger switched off, as an attacker would."""
    conn = await superuser(url)
    try:
        async with conn.transaction():
            for table in AUDIT_TABLES:
                await conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            for statement in statements:
                await conn.execute(statement)
            names = "SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE tgrelid::regclass::text = ANY($1)"
            for table, name in await conn.fetch(names + " AND NOT tgisinternal", AUDIT_TABLES):
                await conn.execute(f"ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name}")
    finally:
        await conn.close()


def test_the_revision_upgrades_downgrades_and_upgrades_again(pg_server_url: str) -> None:
    with scratch_database(pg_server_url) as url:
        migrations.upgrade(url, "0017")
        assert set(AUDIT_TABLES) <= public_tables(url)
        migrations.downgrade(url, "-1")
        assert not set(AUDIT_TABLES) & public_tables(url)
        migrations.upgrade(url, "0017")
        assert set(AUDIT_TABLES) <= public_tables(url)


REFUSED = [
    ("UPDATE audit_entries SET actor_name = 'Mallory'", "append-only"),
    ("UPDATE audit_chain SET hash = hash", "append-only"),
    ("DELETE FROM audit_entries", "younger than the retention floor"),
    ("DELETE FROM audit_chain", "younger than the retention floor"),
    ("DELETE FROM audit_purges", "append-only"),
    ("UPDATE audit_retention SET retention = interval '1 day'", "append-only"),
    ("DELETE FROM audit_retention", "append-only"),
    ("INSERT INTO audit_retention (retention) VALUES (interval '1 day')", "cannot be lowered"),
    *((f"TRUNCATE {table}", "append-only") for table in AUDIT_TABLES),
    ("TRUNCATE audit_entries CASCADE", "append-only"),
]


@pytest.mark.parametrize("who", ["app role", "superuser", "superuser as a replica"])
async def test_the_tables_refuse_update_truncate_and_young_deletes_whoever_asks(
    container: Container, pg_url: str, who: str
) -> None:
    stored = await sealed_chain(container, 3)
    role = f"craig_app_{uuid.uuid4().hex[:12]}"
    conn = await superuser(pg_url)
    try:
        if who == "app role":  # every privilege granted: only the triggers stand in the way
            await conn.execute(f"CREATE ROLE {role} NOLOGIN")
            await conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
            await conn.execute(f"SET ROLE {role}")
        if who == "superuser as a replica":
            await conn.execute("SET session_replication_role = replica")
        for statement, message in REFUSED:
            with pytest.raises(asyncpg.PostgresError, match=message):
                await conn.execute(statement)
        with pytest.raises(asyncpg.PostgresError, match="does not follow"):  # no link that does not follow its head
            await conn.execute(
                "INSERT INTO audit_chain (seq, entry_id, prev_hash, hash, watermark) VALUES (4, $1, $2, $3, 0)",
                uuid.uuid4(),
                b"\1" * 32,
                b"\2" * 32,
            )
        forged = uuid.uuid4()  # nor an entry backdated into purgeable age
        await conn.execute(
            "INSERT INTO audit_entries (id, at, xid, action, resource_type, outcome) "
            "VALUES ($1, '2000-01-01', 1, 'read', 'case', 'allowed')",
            forged,
        )
        at, xid = await conn.fetchrow("SELECT at, xid FROM audit_entries WHERE id = $1", forged)
        assert at.year > 2000 and xid > 1
        if who == "app role":
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match="must be owner"):
                await conn.execute("ALTER TABLE audit_entries DISABLE TRIGGER USER")
        await conn.execute("RESET ROLE")
        assert await conn.fetchval("SELECT count(*) FROM audit_entries") == len(stored) + 1
        assert await conn.fetchval("SELECT count(*) FROM audit_chain") == len(stored)
    finally:
        if who == "app role":
            await conn.execute("RESET ROLE")
            await conn.execute(f"DROP OWNED BY {role}")
            await conn.execute(f"DROP ROLE {role}")
        await conn.close()


async def test_an_edited_entry_is_named(container: Container, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    stored = await sealed_chain(container)
    code, out = await verify(container, capsys)
    assert code == 0 and "intact: 5 links, seq 1 to 5\nhead 5:" in out, out
    await tamper(pg_url, f"UPDATE audit_entries SET actor_name = 'Mallory' WHERE id = '{stored[2].id}'")
    code, out = await verify(container, capsys)
    assert code == 1 and f"BROKEN changed: seq 3 (entry {stored[2].id})" in out, out


@pytest.mark.parametrize("also_the_link", [False, True], ids=["entry", "entry and link"])
async def test_a_deleted_entry_is_named(
    container: Container, pg_url: str, capsys: pytest.CaptureFixture[str], also_the_link: bool
) -> None:
    stored = await sealed_chain(container)
    statements = [f"DELETE FROM audit_entries WHERE id = '{stored[2].id}'"]
    if also_the_link:
        statements.append(f"DELETE FROM audit_chain WHERE entry_id = '{stored[2].id}'")
    await tamper(pg_url, *statements)
    code, out = await verify(container, capsys)
    named = "BROKEN removed: seq 3:" if also_the_link else f"BROKEN removed: seq 3 (entry {stored[2].id})"
    assert code == 1 and named in out, out


async def test_an_entry_inserted_into_the_middle_is_named(
    container: Container, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    await sealed_chain(container)
    store = PostgresAuditChainStore(container.postgres())
    second = await store.link_at(2)
    assert second is not None
    forged = entry("update", case_id=uuid.uuid4(), actor_name="Mallory", changed_fields=["status"])
    forged = attrs.evolve(forged, at=second.entry.at if second.entry else None, seq=3)
    digest = chain_hash(second.hash, forged)
    await tamper(
        pg_url,
        "UPDATE audit_chain SET seq = seq + 1000 WHERE seq >= 3",
        "UPDATE audit_chain SET seq = seq - 999 WHERE seq >= 1000",
        f"INSERT INTO audit_entries (id, at, action, resource_type, case_id, actor_name, outcome, changed_fields) "
        f"VALUES ('{forged.id}', '{forged.at.isoformat() if forged.at else ''}', 'update', 'case', '{forged.case_id}', "
        "'Mallory', 'allowed', '{status}')",
        f"INSERT INTO audit_chain (seq, entry_id, prev_hash, hash, watermark) "
        f"VALUES (3, '{forged.id}', '\\x{second.hash.hex()}', '\\x{digest.hex()}', 0)",
    )
    assert (await store.link_at(3)).fits(second.hash)  # type: ignore[union-attr]  # a careful forgery
    code, out = await verify(container, capsys)
    assert code == 1 and f"BROKEN inserted: seq 3 (entry {forged.id})" in out, out


async def test_expect_head_catches_a_rewritten_chain(
    container: Container, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = await sealed_chain(container)
    head = await container.audit.head()()
    assert head is not None
    store = PostgresAuditChainStore(container.postgres())
    links = await store.links(0, 100)
    # The attacker edits entry 3 and recomputes every hash from it on: the chain is consistent.
    edited = [link.entry for link in links]
    edited[2] = attrs.evolve(edited[2], actor_name="Mallory")  # type: ignore[arg-type]
    prev, rewrite = links[1].hash, []
    for link, e in zip(links[2:], edited[2:], strict=True):
        assert e is not None
        digest = chain_hash(prev, e)
        rewrite.append(
            f"UPDATE audit_chain SET prev_hash = '\\x{prev.hex()}', hash = '\\x{digest.hex()}' WHERE seq = {link.seq}"
        )
        prev = digest
    await tamper(pg_url, f"UPDATE audit_entries SET actor_name = 'Mallory' WHERE id = '{stored[2].id}'", *rewrite)
    assert verify_chain(await store.links(0, 100)) is None
    assert (await verify(container, capsys))[0] == 0  # alone, a consistent rewrite looks intact
    code, out = await verify(container, capsys, head.hash.hex())
    assert code == 1 and "BROKEN rewritten" in out, out
    code, out = await verify(container, capsys, f"{head.seq}:{head.hash.hex()}")
    assert code == 1 and "BROKEN rewritten: seq 5" in out, out


async def _append_and_hold(container: Container, ready: asyncio.Barrier) -> AuditEntry:
    """Append in a transaction of its own, wait until every other one has appended, commit.
    If one append waited for another's commit, the barrier would never open; the lock timeout
    turns such a wait into an error instead of a hang."""
    uow = container.uow()
    async with uow:
        await uow.session.execute(text("SET LOCAL lock_timeout = '10s'"))  # type: ignore[attr-defined]
        (stored,) = await uow.audit.append([entry("read")])
        await ready.wait()
        await uow.commit()
    return stored


async def test_an_auditor_s_own_program_checks_the_chain_from_the_rows_as_stored(
    container: Container, pg_url: str
) -> None:
    """README's recipe (canonical JSON of each row, SHA-256 after the previous hash) on the raw
    rows. A text cut at a space was stored ending in it, but hashed as read back, stripped: the
    recipe found such an entry broken while `craig audit verify` called the chain intact."""
    await record(
        container.uow(),
        entry("create", "rule_set", resource_id="x" * 199 + " tail", outcome="denied", actor_name="Zoë  "),
        entry("update", case_id=uuid.uuid4(), changed_fields=["title", "status"], client_ip="2001:db8::1"),
        entry("list", resource_ids=["a", " b ", "c" * 199 + "  d"], request_id="r-1"),
    )
    await container.audit.seal()()
    conn = await superuser(pg_url)
    try:
        rows = await conn.fetch(
            "SELECT e.*, c.seq, c.prev_hash, c.hash FROM audit_chain c JOIN audit_entries e ON e.id = c.entry_id "
            "ORDER BY c.seq"
        )
    finally:
        await conn.close()
    assert len(rows) == 3
    for row in rows:
        document = {
            "v": 1,
            **{name: row[name] for name in ("actor_role", "actor_name", "action", "resource_type", "resource_id")},
            **{name: row[name] for name in ("outcome", "request_id", "client_ip", "seq")},
            **{name: str(row[name]) if row[name] is not None else None for name in ("id", "actor", "case_id")},
            "resource_ids": list(row["resource_ids"]),
            "changed_fields": list(row["changed_fields"]),
            "at": row["at"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        encoded = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
        assert hashlib.sha256(bytes(row["prev_hash"]) + encoded).digest() == bytes(row["hash"]), document


async def test_concurrent_appends_do_not_wait_on_each_other(container: Container) -> None:
    n = 20
    ready = asyncio.Barrier(n)
    stored = await asyncio.gather(*(_append_and_hold(container, ready) for _ in range(n)))
    await container.audit.seal()()
    store = PostgresAuditChainStore(container.postgres())
    links = await store.links(0, 100)
    assert {link.entry_id for link in links} == {e.id for e in stored} and verify_chain(links) is None


async def test_an_entry_that_commits_late_is_sealed_after_it_commits(container: Container) -> None:
    seal = container.audit.seal()
    late = container.uow()
    async with late:
        (held,) = await late.audit.append([entry("update", changed_fields=["title"])])
        # Meanwhile another request is audited and commits, without waiting for this one.
        meanwhile = container.uow()
        async with meanwhile:
            await meanwhile.session.execute(text("SET LOCAL lock_timeout = '10s'"))  # type: ignore[attr-defined]
            (other,) = await meanwhile.audit.append([entry("read")])
            await meanwhile.commit()
        assert (await seal()).sealed == 1  # the committed one; the open one is invisible
        (after,) = await record(container.uow(), entry("list"))
        assert (await seal()).sealed == 1
        await late.commit()
    assert held.at is not None and other.at is not None and held.at < other.at  # it started first
    batch = await seal()
    assert batch.sealed == 1 and batch.head is not None and batch.head.seq == 3
    links = await PostgresAuditChainStore(container.postgres()).links(0, 10)
    assert [link.entry_id for link in links] == [other.id, after.id, held.id] and verify_chain(links) is None
    assert (await seal()).sealed == 0


async def test_two_sealers_at_once_do_not_fork_the_chain(container: Container, pg_url: str) -> None:
    for _ in range(10):
        await record(container.uow(), *(entry() for _ in range(30)))
    databases = [PostgresDatabase(pg_url) for _ in range(2)]
    sealers = [PostgresAuditChainStore(db) for db in databases]

    async def drain(store: PostgresAuditChainStore) -> int:
        total = 0
        while (batch := await store.seal_pending(7)).sealed:
            total += batch.sealed
        return total

    try:
        counts = await asyncio.gather(*(drain(s) for s in sealers))
    finally:
        for db in databases:
            await db.dispose()
    links = await PostgresAuditChainStore(container.postgres()).links(0, 1000)
    assert sum(counts) == 300 and [link.seq for link in links] == list(range(1, 301))
    assert len({link.entry_id for link in links}) == 300 and verify_chain(links) is None


async def test_a_purge_keeps_the_rest_verifiable(
    container: Container, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = await superuser(pg_url)
    try:  # what only the owner can do: lower the floor, for a test that cannot wait seven years
        await conn.execute("ALTER TABLE audit_retention DISABLE TRIGGER audit_retention_only_longer")
        await conn.execute("INSERT INTO audit_retention (retention) VALUES (interval '1 second')")
        await conn.execute("ALTER TABLE audit_retention ENABLE ALWAYS TRIGGER audit_retention_only_longer")
    finally:
        await conn.close()
    await sealed_chain(container, 5)
    await asyncio.sleep(1.5)
    young = await sealed_chain(container, 2)
    purge = container.audit.purge_expired()
    assert await purge(timedelta(seconds=1), 3) == 3
    assert await purge(timedelta(seconds=1), 3) == 2
    assert await purge(timedelta(seconds=1), 3) == 0
    code, out = await verify(container, capsys)
    assert code == 0 and "intact: 2 links, seq 6 to 7" in out and "entries before seq 6 were purged" in out, out
    assert "it was lowered at some time" in out
    with pytest.raises(PortError, match="younger than the retention floor"):
        async with container.postgres().transaction() as db:
            await db.execute(text(f"DELETE FROM audit_entries WHERE id = '{young[0].id}'"))
    await tamper(pg_url, "DELETE FROM audit_chain WHERE seq = 6")  # the first kept link goes too
    code, out = await verify(container, capsys)
    assert code == 1 and "BROKEN removed: seq 6:" in out, out
