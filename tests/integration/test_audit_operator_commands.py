"""An operator's commands leave an entry in the audit trail, on real PostgreSQL: ``craig keys
rotate`` and ``craig dlx replay`` run as real processes, and a replay that fails halfway is
still recorded (its entry is written before anything is replayed)."""

from __future__ import annotations

import base64
import getpass
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from craig.entrypoints.cli.dlx import replay_dead_letters
from tests.support import apps
from tests.support.audit import superuser
from tests.support.dead_letters import BrokenDeadLetters, dead_letter
from tests.support.services import BrokerNames, free_port

pytestmark = pytest.mark.integration

CRAIG = str(Path(sys.executable).parent / "craig")
KEY = base64.b64encode(os.urandom(32)).decode()


def production(tmp_path: Path, database_url: str, **variables: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")}
    return {
        **clean,
        "CRAIG_PROFILE": "production",
        "CRAIG_DATA_DIR": str(tmp_path),
        "CRAIG_DATABASE__URL": database_url,
        "CRAIG_BROKER__URL": f"amqp://guest:guest@127.0.0.1:{free_port()}/",
        "CRAIG_OBJECT_STORE__ENDPOINT": f"127.0.0.1:{free_port()}",
        "CRAIG_OBJECT_STORE__ACCESS_KEY": "craig",
        "CRAIG_OBJECT_STORE__SECRET_KEY": "secret",
        "CRAIG_AUTH__JWT_SECRET": "x" * 40,
        "CRAIG_FIELD_ENCRYPTION_KEY": f"k7:{KEY}",
        "CRAIG_LOG_JSON": "false",
        **variables,
    }


def with_broker(env: dict[str, str], rabbit_url: str, names: BrokerNames) -> dict[str, str]:
    """``env`` on the real broker, under this test's exchange and queue names."""
    names.queue("dead-letters")
    return {
        **env,
        "CRAIG_BROKER__URL": rabbit_url,
        "CRAIG_BROKER__EVENTS_EXCHANGE": names.events_exchange,
        "CRAIG_BROKER__DLX_EXCHANGE": names.dlx_exchange,
        "CRAIG_BROKER__QUEUE_PREFIX": names.queue_prefix,
    }


def craig(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CRAIG, *args], env=env, capture_output=True, text=True, timeout=120)


async def operator_entries(pg_url: str) -> list[dict[str, Any]]:
    conn = await superuser(pg_url)
    try:
        rows = await conn.fetch(
            "SELECT actor, actor_role, actor_name, action, resource_type, resource_id, resource_ids, outcome,"
            " case_id FROM audit_entries WHERE actor_role = 'operator' ORDER BY at, id"
        )
    finally:
        await conn.close()
    return [{**dict(r), "resource_ids": list(r["resource_ids"])} for r in rows]


def operator(
    action: str, resource_type: str, resource_id: str | None, resource_ids: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "actor": None,
        "actor_role": "operator",
        "actor_name": getpass.getuser(),
        "action": action,
        "resource_type": resource_type,
        "resource_id": resource_id,
        "resource_ids": list(resource_ids),
        "outcome": "allowed",
        "case_id": None,
    }


async def test_keys_rotate_records_who_rotated_to_which_key(tmp_path: Path, pg_url: str) -> None:
    rotated = craig("keys", "rotate", env=production(tmp_path, pg_url))
    assert rotated.returncode == 0, rotated.stderr
    assert await operator_entries(pg_url) == [operator("keys_rotate", "field_key", "k7")]


async def test_dlx_replay_records_the_ids_asked_for_or_all(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    env = with_broker(production(tmp_path, pg_url), rabbit_url, broker_names)
    ids = sorted(str(uuid.uuid4()) for _ in range(2))
    by_id = craig("dlx", "replay", "--id", ids[1], "--id", ids[0], env=env)
    # No such letters: recorded all the same, and named as not replayed (exit 1).
    assert by_id.returncode == 1 and f"not replayed: {ids[0]}, {ids[1]}" in by_id.stderr, by_id.stderr
    every = craig("dlx", "replay", "--all", env=env)
    assert every.returncode == 0, every.stderr
    assert await operator_entries(pg_url) == [
        operator("dlx_replay", "dead_letter", None, ids),
        operator("dlx_replay", "dead_letter", "all"),
    ]


async def test_a_replay_that_fails_halfway_is_still_recorded(tmp_path: Path, pg_url: str) -> None:
    container = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    letters = [dead_letter(), dead_letter()]
    container.dead_letters.override(providers.Object(BrokenDeadLetters(letters)))
    with pytest.raises(ConnectionError):
        await replay_dead_letters(container, [letter.event_id for letter in letters], 10)
    wanted = sorted(str(letter.event_id) for letter in letters)
    assert await operator_entries(pg_url) == [operator("dlx_replay", "dead_letter", None, wanted)]


def test_audit_head_and_verify_need_the_database_only(tmp_path: Path, pg_url: str) -> None:
    """The broker and the object store of ``production`` are closed ports here: the chain is all
    these commands read, so neither refuses (nor waits) for want of them."""
    env = production(tmp_path, pg_url)
    head = craig("audit", "head", env=env)
    assert head.returncode in (0, 1) and "broker" not in head.stderr and "object" not in head.stderr, head.stderr
    verified = craig("audit", "verify", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


async def test_dlx_discard_records_the_ids_asked_for_and_names_those_it_did_not_find(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    env = with_broker(production(tmp_path, pg_url), rabbit_url, broker_names)
    ids = sorted(str(uuid.uuid4()) for _ in range(2))
    discarded = craig("dlx", "discard", "--id", ids[1], "--id", ids[0], env=env)
    assert discarded.returncode == 1, discarded.stdout + discarded.stderr
    assert "0 discarded" in discarded.stdout
    assert f"name one with --queue): {ids[0]}, {ids[1]}" in discarded.stderr
    assert await operator_entries(pg_url) == [operator("dlx_discard", "dead_letter", None, ids)]
    without_id = craig("dlx", "discard", env=env)
    assert without_id.returncode == 2 and "--id" in without_id.stderr


async def test_unrouted_commands_record_the_ids_asked_for_and_name_those_they_did_not_find(
    tmp_path: Path, pg_url: str, rabbit_url: str, broker_names: BrokerNames
) -> None:
    """``craig unrouted`` as processes on the real broker: an empty unrouted queue lists nothing,
    and a replay or a discard of ids it does not hold is recorded all the same and names them."""
    broker_names.queue("unrouted")
    env = with_broker(production(tmp_path, pg_url), rabbit_url, broker_names)
    listed = craig("unrouted", "list", env=env)
    assert listed.returncode == 0 and listed.stdout == "0 unrouted events\n", listed.stderr
    ids = sorted(str(uuid.uuid4()) for _ in range(2))
    replayed = craig("unrouted", "replay", "--id", ids[1], "--id", ids[0], env=env)
    assert replayed.returncode == 1 and replayed.stdout == "0 replayed\n", replayed.stderr
    assert f"holds it right now): {ids[0]}, {ids[1]}" in replayed.stderr and "no such unrouted event" in replayed.stderr
    every = craig("unrouted", "replay", "--all", env=env)
    assert every.returncode == 0 and every.stdout == "0 replayed\n", every.stderr
    discarded = craig("unrouted", "discard", "--id", ids[0], env=env)
    assert discarded.returncode == 1 and "not discarded (no such unrouted event, or another" in discarded.stderr
    assert discarded.stderr.rstrip().endswith(ids[0])
    assert await operator_entries(pg_url) == [
        operator("unrouted_replay", "unrouted_event", None, ids),
        operator("unrouted_replay", "unrouted_event", "all"),
        operator("unrouted_discard", "unrouted_event", None, [ids[0]]),
    ]
