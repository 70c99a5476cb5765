"""Logging configured as ``craig serve`` configures it, for one test, then put back as it was."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog

from craig.entrypoints.logging import configure_logging


@contextmanager
def craig_logging(level: str = "INFO", json_lines: bool = True) -> Iterator[None]:
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, root_level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    configure_logging(level, json_lines)
    try:
        yield
    finally:
        structlog.configure(**saved)
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(root_level)
        for name, lvl in levels.items():
            logging.getLogger(name).setLevel(lvl)


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of ``text`` that is a JSON object (each must be: one line, one object)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def wait_for_line(process: subprocess.Popen[bytes], log: Path, text: str, timeout: float = 90.0) -> None:
    """Until ``text`` is in ``log``, the output file of ``process``; fails if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text():
            return
        if process.poll() is not None:
            pytest.fail(f"{process.args} exited with {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    pytest.fail(f"{process.args} never logged {text!r}:\n{log.read_text()}")
