"""``craig keys rotate``: re-encrypt every encrypted column under the newest field key.

Procedure (see docs): put the new key first in ``CRAIG_FIELD_ENCRYPTION_KEY``
(``new:KEY,old:KEY``) on every instance and restart them; run this; retire the old key once it
reports nothing remaining. Progress goes to stderr, the summary to stdout.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from craig.entrypoints.container import Container
from craig.entrypoints.runtime import StartupError, running
from craig.entrypoints.settings import Profile
from craig.usecases.rotate_keys import ColumnReport, Progress

BAR_WIDTH = 30


class ProgressBar:
    """One line per column, redrawn in place on a terminal (plain lines otherwise)."""

    def __init__(self, stream: TextIO, min_interval_seconds: float = 0.1) -> None:
        self.stream = stream
        self.interactive = stream.isatty()
        self.min_interval = min_interval_seconds
        self._last_draw = 0.0

    def __call__(self, progress: Progress) -> None:
        finished = progress.done >= progress.total
        now = time.monotonic()
        if self.interactive and not finished and now - self._last_draw < self.min_interval:
            return
        self._last_draw = now
        self.stream.write(self.render(progress) + ("\n" if finished or not self.interactive else "\r"))
        self.stream.flush()

    @staticmethod
    def render(progress: Progress) -> str:
        total = max(progress.total, 1)
        share = min(progress.done / total, 1.0) if progress.total else 1.0
        filled = int(share * BAR_WIDTH)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        return f"{progress.column!s:<32} [{bar}] {share:4.0%} {progress.done}/{progress.total}"


def summary(reports: list[ColumnReport]) -> str:
    lines = []
    for report in reports:
        line = f"{report.column!s:<32} rewritten={report.rewritten} remaining={report.remaining}"
        if report.undecryptable:
            line += f" undecryptable={report.undecryptable}"
        lines.append(line)
    remaining = sum(r.remaining for r in reports)
    lines.append(
        "done: every value is under the newest key; older keys may be removed"
        if remaining == 0
        else f"{remaining} values are not under the newest key yet; see the lines above, then run again"
    )
    return "\n".join(lines)


async def rotate(container: Container, stderr: TextIO = sys.stderr) -> int:
    """The command: 0 when everything is under the newest key, 1 when values remain."""
    settings = container.settings()
    if settings.profile is Profile.MEMORY:
        raise StartupError("the memory profile keeps nothing on disk: there is nothing to rotate")
    encryptor = container.field_encryptor()
    if encryptor is None:
        raise StartupError("no field key is set (encryption_mode=optional): set CRAIG_FIELD_ENCRYPTION_KEY first")
    async with running(container):
        print(
            f"re-encrypting under key {encryptor.current_key_id!r} (ring: {', '.join(encryptor.key_ids)})",
            file=stderr,
        )
        reports = await container.rotate_keys()(ProgressBar(stderr))
    print(summary(reports))
    return 0 if all(r.remaining == 0 for r in reports) else 1
