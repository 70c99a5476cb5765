"""A pool of daemon threads for the object store's blocking SDK calls.

``concurrent.futures.ThreadPoolExecutor`` joins every one of its threads when the interpreter
exits, so a call to an S3 that accepted the connection and then went silent held the process
open until the call's read timeout ran out (a minute), after the process had stopped everything
else: a restart on a bad night took a minute longer than it had to. These threads are daemons,
so the process ends without waiting for them. A call cut short that way is what a crash of the
process does to it, which Craig is built to survive (a put is one PUT request, so S3 stores the
object whole or not at all).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreadPool(Executor):
    """At most ``size`` daemon threads, started as calls need them and then kept; calls beyond
    them wait in order. Usable with ``loop.run_in_executor``."""

    def __init__(self, size: int, name: str) -> None:
        if size < 1:
            raise ValueError("a thread pool needs at least one thread")
        self._size = size
        self._name = name
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        #: A permit per call a thread finished: a call that takes one waits for that thread
        #: instead of starting another. Once every thread is started (threads then never end
        #: before shutdown) permits may outnumber idle threads, which no longer matters.
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._numbers = itertools.count(1)
        self._shut = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot run a call on a thread pool that was shut down")
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and self._threads < self._size:
                thread = threading.Thread(target=self._serve, name=f"{self._name}_{next(self._numbers)}", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # the system will not make another thread
                    if not self._threads:
                        future.cancel()  # queued, it would run later for a caller told it failed
                        raise
                    # The threads there are will take it.
                else:
                    self._threads += 1
        return future

    def _serve(self) -> None:
        while (work := self._work.get()) is not None:
            future, fn, args, kwargs = work
            del work
            if not future.set_running_or_notify_cancel():
                self._idle.release()
                continue
            error: BaseException | None = None
            try:
                result = fn(*args, **kwargs)
            except BaseException as failed:  # the caller's future carries it, as the stdlib pool's does
                error, result = failed, None
            del fn, args, kwargs  # drop the call's arguments while idle
            # Idle before the caller hears back, so a call it makes next finds this thread and
            # does not start another.
            self._idle.release()
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
            del future, result, error

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls; threads end once the calls queued before have run (``wait``
        is ignored: a daemon thread is never waited for)."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
            if cancel_futures:
                while True:
                    try:
                        work = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if work is not None:
                        work[0].cancel()
            for _ in range(self._threads):
                self._work.put(None)
