"""The worker's readiness arithmetic, and which startup failures count as "cannot reach" (start
degraded and retry) rather than "refused" (a misconfiguration, refused at once)."""

from __future__ import annotations

import asyncio
import errno
from datetime import timedelta

import aiormq.exceptions
import pytest

from craig.entrypoints.profiles.lifecycle import unreachable
from craig.entrypoints.workers import loop as loop_module
from craig.entrypoints.workers.health import loop_report
from craig.entrypoints.workers.loop import Loop
from craig.ports.errors import BrokerUnavailable, ObjectStoreDefect, ObjectStoreUnavailable


async def _pass() -> bool:
    return False


def _caused(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


def test_a_loop_is_late_after_three_intervals_and_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "LAST_PASSES", {"fast": 100.0, "slow": 100.0})
    monkeypatch.setattr("craig.entrypoints.workers.health.LAST_PASSES", loop_module.LAST_PASSES)
    loops = [Loop("fast", _pass, timedelta(seconds=1)), Loop("slow", _pass, timedelta(minutes=1))]
    report = loop_report(loops, started=0.0, now=140.0)  # both last passed 40 s ago
    assert report["fast"] == {"status": "late", "last_pass_age_seconds": 40.0, "limit_seconds": 33.0}
    assert report["slow"] == {"status": "ok", "last_pass_age_seconds": 40.0, "limit_seconds": 210.0}


def test_a_loop_without_a_pass_yet_is_given_its_limit_from_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("craig.entrypoints.workers.health.LAST_PASSES", {"old": 1.0})
    loops = [Loop("new", _pass, timedelta(seconds=1)), Loop("old", _pass, timedelta(seconds=1))]
    early = loop_report(loops, started=10.0, now=20.0)
    assert early["new"] == {"status": "ok", "last_pass_age_seconds": None, "limit_seconds": 33.0}
    assert early["old"]["last_pass_age_seconds"] is None  # a pass before this start does not count
    assert loop_report(loops, started=10.0, now=50.0)["new"]["status"] == "late"


async def test_a_pass_is_recorded_and_a_failed_one_is_not() -> None:
    calls = 0

    async def flaky() -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        stop.set()
        return False

    stop = asyncio.Event()
    loop_module.LAST_PASSES.pop("flaky-test", None)
    await Loop("flaky-test", flaky, timedelta(seconds=1)).run(stop)
    assert calls == 2 and "flaky-test" in loop_module.LAST_PASSES


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (_caused(BrokerUnavailable("x"), ConnectionRefusedError(errno.ECONNREFUSED, "refused")), True),
        (_caused(BrokerUnavailable("x"), TimeoutError()), True),
        (_caused(BrokerUnavailable("x"), aiormq.exceptions.ProbableAuthenticationError("ACCESS_REFUSED")), False),
        (BrokerUnavailable("x"), False),
        (ObjectStoreUnavailable("no connection"), True),
        (ObjectStoreDefect("InvalidAccessKeyId"), False),
    ],
)
def test_only_what_could_not_be_reached_is_transient(error: BaseException, expected: bool) -> None:
    assert unreachable(error) is expected
