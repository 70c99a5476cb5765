"""The ``craig`` command in process: its manual, help on everything, the version, and every
operator mistake as one line on stderr with exit code 2."""

from __future__ import annotations

import importlib.metadata
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import structlog

from craig.entrypoints import cli
from craig.entrypoints.cli.root import craig

pytestmark = pytest.mark.unit


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    """No CRAIG_ variable of the machine; the memory profile in a data dir of this test."""
    for name in [n for n in os.environ if n.startswith("CRAIG_") and not n.startswith("CRAIG_TEST_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CRAIG_PROFILE", "memory")
    monkeypatch.setenv("CRAIG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CRAIG_LOG_JSON", "false")
    logging_config = structlog.get_config()
    yield monkeypatch
    structlog.configure(**logging_config)  # bootstrap points structlog at this test's captured stderr


def commands(group: click.Group = craig, path: str = "craig") -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from commands(command, f"{path} {name}")


def test_the_manual(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    manual = capsys.readouterr().out
    for expected in (
        "child-welfare case workers",
        "Profiles (CRAIG_PROFILE):",
        "memory ",
        "embedded ",
        "production ",
        "CRAIG_DATABASE__URL_FILE",
        "--effective",
        "Exit codes",
        "  0    success",
        "  1    the command ran, and found something to act on",
        "  2    usage error",
        "  130  interrupted",
    ):
        assert expected in manual, expected
    for name in (
        "serve",
        "worker",
        "db",
        "token",
        "status",
        "dlx",
        "outbox",
        "unrouted",
        "attachments",
        "exchange",
        "config",
        "keys",
    ):
        assert f"  {name} " in manual, name


def test_every_command_and_option_has_help_and_every_command_its_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = dict(commands())
    assert set(found) >= {
        "craig serve",
        "craig worker",
        "craig db upgrade",
        "craig db downgrade",
        "craig token",
        "craig status",
        "craig dlx list",
        "craig dlx replay",
        "craig config",
        "craig keys rotate",
        "craig attachments failed",
        "craig attachments discard",
        "craig exchange failed",
        "craig exchange retry",
        "craig outbox failing",
        "craig outbox retry",
        "craig outbox discard",
        "craig unrouted list",
        "craig unrouted replay",
        "craig unrouted discard",
    }
    for path, command in found.items():
        assert command.help, path
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{path} {param.opts}"
            else:
                assert param.human_readable_name.upper() in command.help, f"{path} {param.name}"
        if not isinstance(command, click.Group):
            assert cli.main([*path.split()[1:], "--help"]) == 0
            shown = capsys.readouterr().out
            assert "Exit codes:" in shown and "  0    " in shown and "  2    " in shown, path
    assert "  1    values remain under an older key" in _help(capsys, "keys", "rotate")


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def test_the_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"craig {importlib.metadata.version('craig')}\n"


SOME_ID = str(uuid.uuid4())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["nosuch"], "No such command 'nosuch'"),
        (["status", "--bogus"], "--bogus"),  # click words it differently before 8.4
        (["token", "--sub", "not-a-uuid", "--role", "caseworker", "--name", "A"], "is not a valid UUID"),
        (["token", "--sub", SOME_ID, "--role", "boss", "--name", "A"], "'boss' is not one of"),
        (["token", "--sub", SOME_ID, "--role", "caseworker", "--name", "A", "--ttl", "0"], "--ttl"),
        (["token", "--role", "caseworker", "--name", "A"], "Missing option '--sub'"),
        (["dlx", "replay"], "--id EVENT_ID (once or more) or --all"),
        (["dlx", "replay", "--all", "--id", SOME_ID], "not both"),
        (["dlx", "replay", "--id", "42"], "is not a valid UUID"),
        (["dlx", "list", "--limit", "-1"], "--limit"),
        (["keys", "rotate", "--batch-size", "0"], "--batch-size"),
        (["keys", "rotate", "--batch-size", "10001"], "--batch-size"),
        (["attachments", "discard"], "Missing option '--id'"),
        (["attachments", "discard", "--id", "42"], "is not a valid UUID"),
        (["attachments", "failed", "--limit", "10001"], "--limit"),
        (["exchange", "retry"], "Missing option '--id'"),
        (["unrouted", "replay"], "--id EVENT_ID (once or more) or --all"),
        (["outbox", "retry"], "--id EVENT_ID (once or more) or --all"),
        (["outbox", "retry", "--all", "--id", SOME_ID], "not both"),
        (["outbox", "failing", "--limit", "0"], "--limit"),
        (["outbox", "retry", "--id", SOME_ID, "--limit", "5"], "--limit goes with --all"),
        (["outbox", "discard"], "--id"),
        (["outbox", "discard", "--all"], "--all"),
        (["unrouted", "replay", "--all", "--id", SOME_ID], "not both"),
        (["unrouted", "discard"], "Missing option '--id'"),
        (["exchange", "failed", "--limit", "0"], "--limit"),
        (["serve", "--port", "70000"], "--port"),
        (["db", "downgrade"], "Missing argument 'REVISION'"),
        (["config", "--effective", "extra"], "unexpected extra argument"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    argv: list[str], expected: str, environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("craig: ") and expected in lines[0], captured.err
    assert "see `craig" in lines[0] and "--help`" in lines[0]
    assert captured.out == ""


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"CRAIG_PROFILE": "boss"}, "CRAIG_PROFILE='boss' is not valid; use one of: memory, embedded, production"),
        ({"CRAIG_HTTP__PROT": "8000"}, "CRAIG_HTTP__PROT is not a Craig setting; did you mean CRAIG_HTTP__PORT?"),
        ({"CRAIG_HTTP__PORT": "eighty"}, "CRAIG_HTTP__PORT='eighty' is not a number"),
        ({"CRAIG_AUTH__JWT_SECRET_FILE": "/nonexistent/jwt"}, "CRAIG_AUTH__JWT_SECRET_FILE=/nonexistent/jwt cannot"),
    ],
)
@pytest.mark.parametrize(
    "argv", [["status"], ["config", "--effective"], ["token", "--sub", SOME_ID, "--role", "admin", "--name", "A"]]
)
def test_a_bad_setting_is_one_line_and_exit_2(
    argv: list[str],
    variables: dict[str, str],
    expected: str,
    environment: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in variables.items():
        environment.setenv(name, value)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"craig: {expected}"), captured.err
    assert captured.out == ""


def test_a_data_dir_craig_cannot_write_is_one_line_and_exit_2(
    tmp_path: Path, environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    environment.setenv("CRAIG_DATA_DIR", str(blocker / "data"))
    assert cli.main(["token", "--sub", SOME_ID, "--role", "admin", "--name", "A"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("craig:")]
    assert lines == [
        f"craig: the development secret {blocker}/data/secrets/jwt_secret cannot be read or created "
        "(Not a directory); set CRAIG_DATA_DIR to a folder Craig may write"
    ]


def test_a_command_the_profile_cannot_run_is_one_line_and_exit_2(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["db", "upgrade"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "craig: the memory profile has no database to migrate"
