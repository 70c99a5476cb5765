"""The CLI's progress lines: a bar redrawn in place with rate and ETA on a terminal (a real
pseudo terminal here), whole throttled lines on a pipe."""

from __future__ import annotations

import os
import select
import uuid
from pathlib import Path

import pytest
from dependency_injector import providers

from craig.entrypoints.cli.dlx import replay_dead_letters
from craig.entrypoints.cli.progress import ProgressBar
from craig.usecases.events import DeadLetterOperations
from tests.support import apps
from tests.support.dead_letters import FakeDeadLetters, dead_letter

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _drain(fd: int) -> bytes:
    chunks = []
    while select.select([fd], [], [], 0.5)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the pty's other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_on_a_terminal_the_bar_is_redrawn_in_place_with_rate_and_eta() -> None:
    master, slave = os.openpty()
    clock = Clock()
    with open(slave, "w", closefd=True) as terminal:
        bar = ProgressBar(terminal, clock=clock)
        assert bar.interactive  # detected from the stream
        bar.update("referrals.reporter_name", 0, 10)
        clock.now += 1.0
        bar.update("referrals.reporter_name", 2, 10)
        clock.now += 0.05  # sooner than the redraw interval: skipped
        bar.update("referrals.reporter_name", 3, 10)
        clock.now += 4.0
        bar.update("referrals.reporter_name", 10, 10)
        output = _drain(master).decode()
    os.close(master)
    draws = output.split("\r")
    assert draws[0] == ""  # every draw starts at the beginning of the line
    assert draws[1].startswith("referrals.reporter_name") and draws[1].endswith("0/10\x1b[K")
    assert "[######------------------------]  20% 2/10  2.0/s  ETA 0:00:04\x1b[K" in draws[2]
    assert not any("3/10" in draw for draw in draws)
    assert "[##############################] 100% 10/10" in draws[3] and "ETA" not in draws[3]
    assert output.endswith("\n")  # the finished bar keeps its line (\r\n: the pty's newline)


def test_on_a_terminal_a_new_task_starts_a_new_line_and_close_ends_an_open_one() -> None:
    master, slave = os.openpty()
    with open(slave, "w", closefd=True) as terminal:
        bar = ProgressBar(terminal, clock=Clock())
        bar.update("first", 1, 5)
        bar.update("second", 1, 5)
        bar.close()
        output = _drain(master).decode()
    os.close(master)
    assert output.count("\n") == 2
    assert output.index("first") < output.index("\n") < output.index("second")


def test_on_a_pipe_progress_is_whole_lines_throttled_with_the_last_always_written() -> None:
    read, write = os.pipe()
    clock = Clock()
    with open(write, "w", closefd=True) as pipe:
        bar = ProgressBar(pipe, clock=clock)
        assert not bar.interactive
        bar.update("dead letters replayed", 0, 10)
        clock.now += 1.0
        bar.update("dead letters replayed", 2, 10)  # within the line interval: skipped
        clock.now += 5.0
        bar.update("dead letters replayed", 6, 10)
        clock.now += 1.0
        bar.update("dead letters replayed", 10, 10)
        bar.update("dead letters replayed", 10, 10)  # the same again: not repeated
    with open(read, "rb") as reader:
        output = reader.read().decode()
    assert "\r" not in output and "\x1b" not in output
    lines = output.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("dead letters replayed") and lines[0].endswith("   0% 0/10")
    assert lines[1].endswith("[##################------------]  60% 6/10  1.0/s  ETA 0:00:04")
    assert lines[2].endswith("[##############################] 100% 10/10  1.4/s")


async def test_replay_reports_its_progress_with_what_is_known_beforehand(tmp_path: Path) -> None:
    container = apps.make_container(apps.make_settings("memory", tmp_path))
    letters = [dead_letter() for _ in range(3)]
    operations = DeadLetterOperations(FakeDeadLetters(letters), container.uow)
    calls: list[tuple[int, int]] = []
    missing = uuid.uuid4()
    replayed = await operations.replay(
        [letters[0].event_id, letters[2].event_id, missing], 10, lambda *a: calls.append(a)
    )
    assert replayed == [letters[0], letters[2]]
    assert calls == [(0, 3), (1, 3), (2, 3), (2, 2)]  # the missing id is known only at the end
    calls.clear()
    assert await operations.replay(None, 10, lambda *a: calls.append(a)) == [letters[1]]
    assert calls == [(0, 1), (1, 1), (1, 1)]


async def test_dlx_replay_prints_progress_on_stderr_and_the_letters_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    container = apps.make_container(apps.make_settings("memory", tmp_path))
    letters = [dead_letter() for _ in range(4)]
    container.dead_letters.override(providers.Object(FakeDeadLetters(letters)))
    read, write = os.pipe()
    with open(write, "w", closefd=True) as stderr:
        assert await replay_dead_letters(container, None, 3, stderr) == 0
    with open(read, "rb") as reader:
        progress = reader.read().decode().splitlines()
    assert progress[0].startswith("dead letters replayed") and progress[0].endswith("0/3")
    assert progress[-1].startswith("dead letters replayed") and " 100% 3/3" in progress[-1]
    out = capsys.readouterr().out.splitlines()
    out = out[out.index("3 replayed") :]  # structlog, unconfigured in tests, logs to stdout before
    assert [line.split()[0] for line in out[1::2]] == [str(letter.event_id) for letter in letters[:3]]
    assert out[1].endswith("queue=craig.recorder retries=5 first_failed_at=2026-01-02T03:04:05+00:00")
    assert out[2] == "    last_error: attempt 6 failed"


async def test_dlx_replay_names_the_ids_it_did_not_replay_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    container = apps.make_container(apps.make_settings("memory", tmp_path))
    letters = [dead_letter() for _ in range(2)]
    container.dead_letters.override(providers.Object(FakeDeadLetters(letters)))
    unknown = uuid.uuid4()
    read, write = os.pipe()
    with open(write, "w", closefd=True) as stderr:
        assert await replay_dead_letters(container, [letters[0].event_id, unknown], 10, stderr) == 1
    os.close(read)
    captured = capsys.readouterr()
    assert "1 replayed" in captured.out.splitlines()
    assert f"craig: not replayed: {unknown}" in captured.err
