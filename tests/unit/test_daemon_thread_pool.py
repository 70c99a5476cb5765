"""The object store's pool of daemon threads: what ``run_in_executor`` needs of an executor
(results, exceptions, cancellation, a bound on threads), and threads the exit never waits for."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future

import pytest

from craig.adapters.objectstore.threads import DaemonThreadPool


def _name() -> str:
    return threading.current_thread().name


async def test_calls_run_on_its_daemon_threads_and_return_their_results_and_errors() -> None:
    pool = DaemonThreadPool(2, "craig-t")
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(pool, lambda: (_name(), threading.current_thread().daemon)) == (
        "craig-t_1",
        True,
    )
    with pytest.raises(ZeroDivisionError):
        await loop.run_in_executor(pool, lambda: 1 / 0)
    assert await loop.run_in_executor(pool, divmod, 7, 2) == (3, 1)
    pool.shutdown()


def test_never_more_threads_than_its_size_and_calls_beyond_them_wait_in_order() -> None:
    pool = DaemonThreadPool(2, "craig-bound")
    release = threading.Event()
    started: list[str] = []
    blocked = [pool.submit(lambda: (started.append(_name()), release.wait())) for _ in range(2)]
    queued = [pool.submit(lambda n=n: n) for n in range(5)]
    while len(started) < 2:
        release.wait(0.001)
    assert sorted(started) == ["craig-bound_1", "craig-bound_2"]
    assert not any(f.done() for f in queued)  # both threads are busy: none ran on a third
    release.set()
    assert [f.result() for f in queued] == list(range(5))
    assert all(f.result() == (None, True) for f in blocked)
    names = {t.name for t in threading.enumerate() if t.name.startswith("craig-bound_")}
    assert names == {"craig-bound_1", "craig-bound_2"}
    pool.shutdown()


def test_an_idle_thread_takes_the_next_call_instead_of_a_new_thread() -> None:
    pool = DaemonThreadPool(4, "craig-idle")
    for _ in range(20):
        pool.submit(_name).result()  # one at a time: the first thread is idle again each time
    assert {t.name for t in threading.enumerate() if t.name.startswith("craig-idle_")} == {"craig-idle_1"}
    pool.shutdown()


def test_a_call_cancelled_while_it_waits_never_runs() -> None:
    pool = DaemonThreadPool(1, "craig-t")
    release, ran = threading.Event(), []
    busy = pool.submit(release.wait)
    waiting: Future[None] = pool.submit(lambda: ran.append(1))
    assert waiting.cancel()
    release.set()
    busy.result()
    pool.submit(lambda: None).result()  # runs after the cancelled one would have
    assert ran == []
    pool.shutdown()


def test_shutdown_lets_queued_calls_finish_or_cancels_them_and_takes_no_more() -> None:
    pool = DaemonThreadPool(1, "craig-t")
    release = threading.Event()
    busy = pool.submit(release.wait)
    queued = pool.submit(lambda: "ran")
    pool.shutdown(wait=False)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)
    release.set()
    assert (busy.result(), queued.result()) == (True, "ran")

    other = DaemonThreadPool(1, "craig-t")
    blocker = threading.Event()
    other.submit(blocker.wait)
    dropped = other.submit(lambda: "ran")
    other.shutdown(cancel_futures=True)
    blocker.set()
    assert dropped.cancelled()


def test_a_pool_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least one"):
        DaemonThreadPool(0, "craig-t")


def test_when_no_thread_can_be_started_a_call_fails_and_never_runs_later(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = DaemonThreadPool(2, "craig-nostart")
    ran: list[str] = []
    start = threading.Thread.start

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        pool.submit(lambda: ran.append("lost"))
    monkeypatch.setattr(threading.Thread, "start", start)
    release = threading.Event()
    busy = pool.submit(release.wait)  # starts the pool's first thread, and holds it
    monkeypatch.setattr(threading.Thread, "start", refused)
    waiting = pool.submit(lambda: ran.append("kept"))  # no second thread: it waits for the first
    monkeypatch.setattr(threading.Thread, "start", start)
    release.set()
    assert busy.result() is True and waiting.result() is None
    assert ran == ["kept"]  # the call refused at first was not run later
    pool.shutdown()
