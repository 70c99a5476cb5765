"""What every command shares: exit codes, the one-line refusal, running a coroutine."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Coroutine
from typing import Any

import click


class ExitCode(enum.IntEnum):
    OK = 0
    #: The command ran, and found something an operator must act on.
    ACTION_NEEDED = 1
    #: A usage error, or the command could not start: one line on stderr says what and how to fix it.
    USAGE = 2
    INTERRUPTED = 130
    #: Whoever read stdout stopped early (``craig status | head -1``).
    PIPE_CLOSED = 141


class Refused(Exception):
    """The command cannot do this: one line for the operator (exit 2)."""


def exit_codes(
    *,
    ok: str = "success",
    action_needed: str | None = None,
    usage: str = "usage error, or it could not start (one line on stderr names the setting or dependency)",
    interrupted: str | None = "interrupted (Ctrl-C)",
) -> str:
    """A command's epilog: the exit codes it can end with (None: one it never uses)."""
    meanings = {
        ExitCode.OK: ok,
        ExitCode.ACTION_NEEDED: action_needed,
        ExitCode.USAGE: usage,
        ExitCode.INTERRUPTED: interrupted,
    }
    lines = ["\b", "Exit codes:"]
    lines += [f"  {code.value:<4} {meaning}" for code, meaning in meanings.items() if meaning is not None]
    return "\n".join(lines)


def run(coro: Coroutine[Any, Any, int]) -> int:
    return asyncio.run(coro)


def echo(text: str = "") -> None:
    click.echo(text)
