"""Two processes starting an embedded PostgreSQL at once on a fresh machine (the test suite's
two workers) both find the system user missing and both run ``useradd``; the loser's
``useradd`` fails (the user exists, or ``/etc/passwd`` is locked). It must wait for the winner's
user, not fail its start. ``pwd`` and ``useradd`` are stood in for: a test creates no user."""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path
from typing import Any

import pytest

from craig.adapters.postgres import embedded
from craig.adapters.postgres.embedded import SYSTEM_USER, EmbeddedPostgres

pytestmark = pytest.mark.unit


class Users:
    """``getpwnam`` finds the user once another process "created" it, after ``appears_after``
    lookups; every ``useradd`` of ours fails as the loser's does."""

    def __init__(self, appears_after: int | None) -> None:
        self.lookups = 0
        self.useradds = 0
        self.appears_after = appears_after

    def getpwnam(self, name: str) -> Any:
        assert name == SYSTEM_USER
        self.lookups += 1
        if self.appears_after is not None and self.lookups > self.appears_after:
            return pwd.struct_passwd((name, "x", 999, 995, "", "/nonexistent", "/usr/sbin/nologin"))
        raise KeyError(name)

    def run(self, argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        assert argv[0] == "useradd" and argv[-1] == SYSTEM_USER
        self.useradds += 1
        return subprocess.CompletedProcess(argv, 10, "", "useradd: cannot lock /etc/passwd; try again later.")


def patched(monkeypatch: pytest.MonkeyPatch, users: Users) -> None:
    monkeypatch.setattr(embedded.pwd, "getpwnam", users.getpwnam)
    monkeypatch.setattr(embedded.subprocess, "run", users.run)


def test_a_useradd_that_lost_the_race_waits_for_the_other_process_s_user(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    users = Users(appears_after=3)
    patched(monkeypatch, users)
    EmbeddedPostgres(tmp_path / "data")._ensure_system_user()
    assert users.useradds == 3 and users.lookups == 4


def test_a_user_that_never_appears_is_a_clear_error_not_a_hang(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    users = Users(appears_after=None)
    patched(monkeypatch, users)
    monkeypatch.setattr(embedded, "_USERADD_RACE_SECONDS", 0.2)
    with pytest.raises(
        RuntimeError, match="could not create the system user 'embedded_postgres': useradd: cannot lock"
    ):
        EmbeddedPostgres(tmp_path / "data")._ensure_system_user()
    assert users.useradds >= 2
