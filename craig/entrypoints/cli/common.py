"""What every command shares: exit codes, the one-line refusal, running a coroutine."""

from __future__ import annotations

import asyncio
import enum
import signal
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, TypeVar

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


class StartInterrupts:
    """While a long-running command starts, SIGTERM and Ctrl-C cancel the start instead of
    ending the process where it stands, so what the start opened unwinds: an embedded
    PostgreSQL it started is stopped, not left running for the next process to reuse and never
    stop. ``asked`` says whether that happened. Unwind inside the block (:meth:`unwound`), so a
    second signal meanwhile is ignored rather than killing the unwinding; on the way out the
    handlers found on the way in are put back, for the server to take the signals over."""

    _SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.asked = False
        self._task: asyncio.Task[Any] | None = None
        self._before: dict[int, Any] = {}

    async def __aenter__(self) -> StartInterrupts:
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in self._SIGNALS:
            self._before[sig] = signal.getsignal(sig)
            loop.add_signal_handler(sig, self._stop)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._SIGNALS:
            loop.remove_signal_handler(sig)
            if self._before.get(sig) is not None:
                signal.signal(sig, self._before[sig])

    async def unwound(self, stack: AsyncExitStack) -> bool:
        """After a ``CancelledError`` in the block: True when a signal caused it, once ``stack``
        (what the start opened) is closed; False when something else did (re-raise it then)."""
        if not self.asked:
            return False
        await stack.aclose()
        return True

    def _stop(self) -> None:
        if not self.asked and self._task is not None:
            self.asked = True
            self._task.cancel()

    def stopped(self) -> bool:
        """After a cancelled start: True when a signal cancelled it (the task is uncancelled,
        so it may go on to return), False when something else did."""
        if not self.asked or self._task is None:
            return False
        self._task.uncancel()
        return True

    @classmethod
    async def enter(cls, stack: AsyncExitStack, *parts: AbstractAsyncContextManager[Any]) -> bool:
        """Enter ``parts`` on ``stack``, in order, taking the signals meanwhile: True when the
        start went through, False when a signal stopped it (what it had opened is closed)."""
        interrupts = cls()
        async with interrupts:
            try:
                for part in parts:
                    await stack.enter_async_context(part)
                await asyncio.sleep(0)  # a signal after the last step cancels here, not in the server
            except asyncio.CancelledError:
                if not await interrupts.unwound(stack):
                    raise
        return not interrupts.stopped()


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


F = TypeVar("F", bound=Callable[..., Any])


def limit_option(default: int, maximum: int | None = None) -> Callable[[F], F]:
    """``--limit N``: at most this many (1 to ``maximum``)."""
    return click.option(
        "--limit",
        type=click.IntRange(min=1, max=maximum),
        default=default,
        show_default=True,
        metavar="N",
        help="At most this many.",
    )


def ids_option(metavar: str, what: str, *, required: bool) -> Callable[[F], F]:
    """``--id ID`` (repeatable), collected as ``ids``: ``what`` names one."""
    return click.option(
        "--id",
        "ids",
        type=click.UUID,
        multiple=True,
        required=required,
        metavar=metavar,
        help=f"{what} (repeat for more).",
    )


def ids_or_all(ids: tuple[Any, ...], every: bool) -> list[Any] | None:
    """What ``--id ID ...`` or ``--all`` chose: the ids, or None for all (a usage error unless
    exactly one of the two was given)."""
    if ids and every:
        raise click.UsageError("give --id EVENT_ID or --all, not both")
    if not ids and not every:
        raise click.UsageError("say which: --id EVENT_ID (once or more) or --all")
    return None if every else list(ids)
