"""One log pipeline for every logger: JSON lines in production, readable lines on a console.

Craig logs through structlog; uvicorn, SQLAlchemy, FastStream, asyncio and every other library
log through the standard ``logging`` module. Both are rendered by the same processors and
written to the same stream (standard error), one whole line per write, with the same keys:

* ``timestamp``: ISO 8601, UTC;
* ``level``: ``debug``, ``info``, ``warning``, ``error`` or ``critical``;
* ``logger``: the logger's name (``craig.entrypoints.cli.serve``, ``uvicorn.error``, ...);
* ``event``: the message;
* and whatever the line binds: ``request_id`` for every line written while a request (or an
  event or a send job it started) is handled, the access line's fields, ``exception``.

The format is JSON unless ``CRAIG_LOG_FORMAT=console`` (or the older ``CRAIG_LOG_JSON=false``).

A library's record goes through the root logger's one handler, whose
:class:`structlog.stdlib.ProcessorFormatter` renders it. Craig's own lines do not take that
detour: structlog renders them and writes them itself (:class:`_StderrLine`), which costs a
third of what building a standard ``LogRecord`` for each did (a send worker writes one per
job, an API process one per request).
"""

from __future__ import annotations

import json as stdlib_json
import logging
import sys
import time
from typing import Any

import msgspec
import structlog

from craig.adapters.telemetry import add_request_id

#: Libraries that install handlers of their own (and stop propagating) when imported or first
#: used; their records are sent back to the root handler instead.
_OWN_HANDLERS = ("faststream", "faststream.access", "faststream.access.rabbit", "uvicorn", "uvicorn.error")
#: Libraries that are chatty at INFO: they log at WARNING and above unless Craig logs at DEBUG.
_QUIET_BELOW_DEBUG = ("sqlalchemy", "aio_pika", "aiormq", "faststream", "httpx", "httpcore", "asyncio", "alembic")
#: Loggers that write what goes over the wire (SQL parameters and result rows, AMQP frames and
#: message bodies, HTTP bodies): personal data. They log at WARNING and above at every level,
#: DEBUG included.
_WIRE = ("sqlalchemy.engine", "sqlalchemy.pool", "aio_pika", "aiormq", "httpcore")


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler on whatever ``sys.stderr`` is *now* (not when logging was configured): test
    runners and daemons swap it, and a closed stream must never turn a request into a 500."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass

    def handleError(self, record: logging.LogRecord) -> None:
        pass  # a broken stream loses the line, never the request


_second: tuple[int, str] = (-1, "")


def utc_timestamp(_logger: Any, _method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    """A log processor: the line's ``timestamp``, ISO 8601 in UTC with microseconds
    (``2026-12-06T05:34:39.123456Z``, always six digits). The date and time of day are formatted
    once a second, not once a line (about half of what ``datetime.now().isoformat()`` costs);
    the second and its text are kept as one tuple, so a thread never pairs one with the other's."""
    global _second
    second, nanoseconds = divmod(time.time_ns(), 1_000_000_000)  # integers: no float rounding
    cached = _second
    if cached[0] != second:
        cached = _second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    event["timestamp"] = f"{cached[1]}.{nanoseconds // 1000:06d}Z"
    return event


def _shared() -> list[structlog.types.Processor]:
    """What every line gets, whether it came through structlog or the standard library."""
    return [
        structlog.contextvars.merge_contextvars,
        add_request_id,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        utc_timestamp,
        structlog.processors.StackInfoRenderer(),
    ]


_JSON_LINE = msgspec.json.Encoder(enc_hook=repr)


def _json_line(event: Any, **_options: Any) -> str:
    """A line of compact JSON, encoded by msgspec (about 8 times faster than ``json.dumps``):
    UUIDs and times as text, anything else it cannot encode as its ``repr``. Kept ASCII (other
    characters escaped as ``\\uXXXX``, as ``json.dumps`` does), so no stream's encoding can refuse
    a line."""
    try:
        line = _JSON_LINE.encode(event).decode()
    except (TypeError, ValueError, OverflowError):  # a key that is not text, say
        return stdlib_json.dumps(event, default=repr, separators=(",", ":"))
    if line.isascii():
        return line
    return stdlib_json.dumps(stdlib_json.loads(line), separators=(",", ":"))


def renderer(json: bool) -> structlog.types.Processor:
    if json:
        return structlog.processors.JSONRenderer(serializer=_json_line)
    # plain_traceback: the default (rich's) prints every frame's local variables, which hold
    # tokens, payloads and personal data; the JSON lines never did.
    return structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)


def formatter(json: bool = True) -> structlog.stdlib.ProcessorFormatter:
    """The formatter of the root handler: every record, structlog's or a library's, one line."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*_shared(), structlog.stdlib.ExtraAdder(), _drop_color_message],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info if json else _keep_exc_info,
            renderer(json),
        ],
    )


def _drop_color_message(_logger: Any, _name: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    """uvicorn adds ``color_message``, the message again with terminal colour codes."""
    event.pop("color_message", None)
    return event


def _keep_exc_info(_logger: Any, _name: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    """The console renderer prints the traceback itself."""
    return event


class _StderrLine:
    """Where structlog writes Craig's own lines: one whole line per write to whatever
    ``sys.stderr`` is now, as the root handler does for the libraries' records (a broken or
    closed stream loses the line, never the request)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name  # what add_logger_name reads

    def msg(self, line: str) -> None:
        try:
            sys.stderr.write(line + "\n")
        except (OSError, ValueError):
            pass

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def _stderr_line(name: str | None = None, *_more: Any) -> _StderrLine:
    return _StderrLine(name or "")


def configure_logging(level: str = "INFO", json: bool = True) -> None:
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    structlog.configure(
        processors=[
            *_shared(),
            structlog.processors.format_exc_info if json else _keep_exc_info,
            renderer(json),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_line,
        cache_logger_on_first_use=False,
    )
    handler = _CurrentStderr()
    handler.setFormatter(formatter(json))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in _OWN_HANDLERS:
        library = logging.getLogger(name)
        for old in list(library.handlers):
            library.removeHandler(old)
        library.propagate = True
        library.setLevel(logging.NOTSET)
    # Craig writes its own access line (craig.access: route template, request id, actor), never
    # uvicorn's (raw path with its query string).
    uvicorn_access = logging.getLogger("uvicorn.access")
    uvicorn_access.handlers.clear()
    uvicorn_access.propagate = False
    uvicorn_access.disabled = True
    for name in _QUIET_BELOW_DEBUG:
        logging.getLogger(name).setLevel(logging.NOTSET if numeric <= logging.DEBUG else max(numeric, logging.WARNING))
    for name in _WIRE:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    logging.captureWarnings(True)
