"""``craig keys rotate`` against real PostgreSQL: every referral column moves to the new key."""

from __future__ import annotations

import base64
import io
import os
import uuid
from pathlib import Path

import pytest
import structlog
from sqlalchemy import text

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.domain.access import Principal, Role
from craig.domain.case_search import CaseQuery
from craig.domain.keyset import Keyset
from craig.entrypoints import cli
from craig.entrypoints.cli import keys
from craig.entrypoints.container import Container
from craig.ports.key_rotation import EncryptedColumn
from craig.usecases.intake import ReferralForm
from tests.support import apps

pytestmark = pytest.mark.integration

OLD, NEW = (base64.b64encode(os.urandom(32)).decode() for _ in range(2))
SOMEONE = Principal(uuid.uuid4(), "Ann", Role.CASEWORKER)
SUPERVISOR = Principal(uuid.uuid4(), "Sue", Role.SUPERVISOR)


def container(tmp_path: Path, pg_url: str, key: str) -> Container:
    return apps.make_container(apps.make_settings("postgres", tmp_path, pg_url, field_encryption_key=key))


async def test_rotation_with_a_progress_bar(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = container(tmp_path / "before", pg_url, f"old:{OLD}")
    for n in range(5):
        form = ReferralForm(reporter_name=f"Reporter {n}", child_first_name=f"Child {n}", concern=f"concern {n}")
        await before.submit_referral(uow=before.uow())(form, f"192.0.2.{n}")
    okafor = await before.open_case(uow=before.uow())(SOMEONE, title="t", family_name="Okafor", opened_at=None)
    await before.postgres().dispose()

    after = container(tmp_path / "after", pg_url, f"new:{NEW},old:{OLD}")
    after.rotate_keys.add_kwargs(batch_size=2)
    stderr = io.StringIO()
    assert await keys.rotate(after, stderr=stderr) == 0

    progress = stderr.getvalue()
    assert "re-encrypting under key 'new' (ring: new, old)" in progress
    assert "referrals.reporter_name" in progress and "[" + "#" * 30 + "] 100% 5/5" in progress
    out = capsys.readouterr().out
    assert "done: every value is under the newest key" in out
    assert "cases.family_name_index" in out and "reindexed=1 remaining=0" in out

    new_only = container(tmp_path / "new-only", pg_url, f"new:{NEW}")
    async with new_only.postgres().transaction() as conn:
        rows = (await conn.execute(text("SELECT id, reporter_name, child_details, concern FROM referrals"))).all()
    assert len(rows) == 5 and all(v.startswith("enc:v2:new:") for r in rows for v in r[1:])
    ring = FieldEncryptor.from_setting(f"new:{NEW}")
    name = EncryptedColumn("referrals", "id", "reporter_name")
    assert sorted(ring.decrypt(r[1], name.context(r[0])) for r in rows) == [f"Reporter {n}" for n in range(5)]
    async with new_only.uow() as uow:
        assert (await uow.referrals.get(rows[0][0])) is not None
        # The family name's blind index moved to the new key: the old key is no longer needed.
        found = await uow.cases.search(SUPERVISOR, CaseQuery.parse(family_name="OKAFOR"), Keyset())
        assert [case.id for case in found.items] == [okafor.id]
    await new_only.postgres().dispose()


def test_the_command_refuses_what_it_cannot_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["keys", "rotate", "--batch-size", "0"]) == 2
    for name in [n for n in os.environ if n.startswith("CRAIG_") and not n.startswith("CRAIG_TEST_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CRAIG_PROFILE", "memory")
    monkeypatch.setenv("CRAIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CRAIG_LOG_JSON", "false")
    logging_config = structlog.get_config()
    try:
        assert cli.main(["keys", "rotate"]) == 2
    finally:  # bootstrap points structlog at this test's captured stderr, closed after the test
        structlog.configure(**logging_config)
    assert "nothing to rotate" in capsys.readouterr().err
