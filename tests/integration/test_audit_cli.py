"""``craig audit`` as an operator runs it: progress on a terminal and on a pipe, the head in
its three forms, and its exit codes."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest

from craig.domain.audit_chain import ExpectedHead
from craig.entrypoints.cli import audit as audit_cli
from tests.integration.test_cli_process import _stderr_on_a_terminal, craig, environment
from tests.support import apps
from tests.support.audit import entry, record

pytestmark = pytest.mark.integration


def test_verify_draws_a_bar_on_a_terminal_and_lines_on_a_pipe(tmp_path: Path) -> None:
    env = environment(tmp_path, CRAIG_LOG_JSON="false")
    code, terminal = _stderr_on_a_terminal(["audit", "verify"], env)
    assert code == 0, terminal
    assert "\raudit chain verified" in terminal and "100% 0/0\x1b[K" in terminal
    piped = craig("audit", "verify", env=env)
    assert piped.returncode == 0 and piped.stdout.startswith("intact: the chain is empty\n"), piped.stdout
    (line,) = [line for line in piped.stderr.splitlines() if "audit chain verified" in line]
    assert line.endswith("100% 0/0") and "\r" not in piped.stderr and "\x1b" not in piped.stderr
    head = craig("audit", "head", env=env)
    assert head.returncode == 1 and head.stdout == "" and "craig: nothing is sealed yet" in head.stderr
    bad = craig("audit", "verify", "--expect-head", "not-a-hash", env=env)
    assert bad.returncode == 2 and "64 hex digits" in bad.stderr


async def test_verify_progress_and_the_head_on_postgres(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    container = apps.make_container(apps.make_settings("postgres", tmp_path, pg_url))
    try:
        for _ in range(4):
            await record(container.uow(), entry("update", case_id=uuid.uuid4()))
        await container.audit.seal()()
        stderr = io.StringIO()
        assert await audit_cli.verify(container, stderr=stderr) == 0
        last = stderr.getvalue().splitlines()[-1]
        assert last.startswith("audit chain verified") and "[" + "#" * 30 + "] 100% 4/4" in last and "/s" in last
        capsys.readouterr()
        assert await audit_cli.show_head(container) == 0
        digest = capsys.readouterr().out.strip()
        assert await audit_cli.show_head(container, with_seq=True) == 0
        assert capsys.readouterr().out.strip() == f"4:{digest}"
        assert await audit_cli.show_head(container, as_json=True) == 0
        assert json.loads(capsys.readouterr().out) == {"seq": 4, "hash": digest}
        assert await audit_cli.verify(container, ExpectedHead.parse(f"4:{digest}")) == 0
        assert "passes through the expected head" in capsys.readouterr().out
    finally:
        await container.postgres().dispose()
