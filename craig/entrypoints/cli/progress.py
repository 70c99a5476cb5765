"""Progress of a long command, on stderr.

On a terminal one line per task is redrawn in place, with rate and time left; piped into a file
or a log collector the same line is written whole (no carriage returns, no escape codes), for
the first update of a task, then at most every ``PROGRESS_LINE_INTERVAL``, and for its end.
Any long command uses it: ``keys rotate``, ``dlx replay``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from craig.domain.constants import (
    PROGRESS_BAR_WIDTH_CHARS,
    PROGRESS_LABEL_WIDTH_CHARS,
    PROGRESS_LINE_INTERVAL,
    PROGRESS_REDRAW_INTERVAL,
)

_CLEAR_TO_END_OF_LINE = "\x1b[K"


def render(label: str, done: int, total: int, rate: float | None = None) -> str:
    """``label [#####-----]  50% 5/10  2.5/s  ETA 0:00:02`` (rate and ETA once known)."""
    share = min(done / total, 1.0) if total > 0 else 1.0
    filled = int(share * PROGRESS_BAR_WIDTH_CHARS)
    bar = "#" * filled + "-" * (PROGRESS_BAR_WIDTH_CHARS - filled)
    line = f"{label:<{PROGRESS_LABEL_WIDTH_CHARS}} [{bar}] {share:4.0%} {done}/{total}"
    if rate:
        line += f"  {rate:,.1f}/s" if rate < 100 else f"  {rate:,.0f}/s"
        if done < total:
            line += f"  ETA {_clock(max(total - done, 0) / rate)}"
    return line


def _clock(seconds: float) -> str:
    whole = int(seconds + 0.5)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class ProgressBar:
    """Call :meth:`update` with each task's progress; tasks follow one another (one line each)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        interactive: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interactive = stream.isatty() if interactive is None else interactive
        self.clock = clock
        self._label: str | None = None
        self._started = 0.0
        self._written_at = 0.0
        self._last: tuple[str, int, int] | None = None
        self._line_open = False

    def update(self, label: str, done: int, total: int) -> None:
        now = self.clock()
        first = label != self._label
        if first:
            self._end_line()
            self._label, self._started = label, now
        finished = done >= total
        if (label, done, total) == self._last:
            return
        interval = PROGRESS_REDRAW_INTERVAL if self.interactive else PROGRESS_LINE_INTERVAL
        if not (first or finished or now - self._written_at >= interval.total_seconds()):
            return
        elapsed = now - self._started
        line = render(label, done, total, done / elapsed if done and elapsed > 0 else None)
        if self.interactive:
            self.stream.write(f"\r{line}{_CLEAR_TO_END_OF_LINE}")
            self._line_open = True
            if finished:
                self._end_line()
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._written_at, self._last = now, (label, done, total)

    def close(self) -> None:
        """End a line left open on a terminal (a task interrupted before its end)."""
        self._end_line()
        self.stream.flush()

    def _end_line(self) -> None:
        if self._line_open:
            self.stream.write("\n")
            self._line_open = False
