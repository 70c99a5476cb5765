"""One log pipeline: Craig's structlog lines and every library's standard-library records render
alike, one JSON object a line with ``logger``, ``level``, ``timestamp`` and ``event``, or
readable lines with ``CRAIG_LOG_FORMAT=console``."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import structlog

from craig.entrypoints.settings import SettingsError, read_environment
from tests.support.logs import craig_logging, json_lines

pytestmark = pytest.mark.unit

LIBRARIES = ["uvicorn.error", "sqlalchemy.engine.Engine", "faststream", "faststream.access.rabbit", "asyncio"]


def test_every_logger_renders_one_json_object_a_line_with_the_same_keys(capsys: pytest.CaptureFixture[str]) -> None:
    import faststream  # noqa: F401  (installs its own handler on "faststream" when imported)

    with craig_logging():
        structlog.get_logger("craig.tests").info("from craig", case_id="c-1")
        for name in LIBRARIES:
            logging.getLogger(name).warning("from %s", name, extra={"color_message": "\x1b[36mfrom\x1b[0m %s"})
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("asyncio").exception("task failed")
    captured = capsys.readouterr()
    assert captured.out == ""  # none reached the handlers FastStream installs (on stdout and stderr)
    lines = json_lines(captured.err)
    assert [line["logger"] for line in lines] == ["craig.tests", *LIBRARIES, "asyncio"]
    for line in lines:
        assert {"logger", "level", "timestamp", "event"} <= line.keys()
        stamped = datetime.fromisoformat(line["timestamp"])
        assert stamped.utcoffset() == timedelta(0)
    assert lines[0] == {**lines[0], "event": "from craig", "level": "info", "case_id": "c-1"}
    assert lines[1]["event"] == "from uvicorn.error" and lines[1]["level"] == "warning"
    assert "\x1b" not in captured.err and "color_message" not in lines[1]
    assert lines[-1]["level"] == "error" and "ValueError: boom" in lines[-1]["exception"]


def test_chatty_libraries_log_from_warning_unless_craig_logs_at_debug(capsys: pytest.CaptureFixture[str]) -> None:
    with craig_logging("INFO"):
        logging.getLogger("sqlalchemy.engine.Engine").info("SELECT 1")
        logging.getLogger("uvicorn.error").info("Started server process")
    assert [line["logger"] for line in json_lines(capsys.readouterr().err)] == ["uvicorn.error"]
    with craig_logging("DEBUG"):
        logging.getLogger("faststream").debug("consumer started")
        # what goes over the wire (SQL parameters and rows, AMQP bodies) is personal data: never logged
        logging.getLogger("sqlalchemy.engine.Engine").info("SELECT 1 ('JANE-DOE',)")
        logging.getLogger("aiormq.connection").debug("frame with a message body")
    assert [line["event"] for line in json_lines(capsys.readouterr().err)] == ["consumer started"]


def test_the_console_format_is_readable_lines(capsys: pytest.CaptureFixture[str]) -> None:
    with craig_logging(json_lines=False):
        structlog.get_logger("craig.tests").info("from craig", case_id="c-1")
        logging.getLogger("uvicorn.error").warning("from uvicorn")
    first, second = capsys.readouterr().err.splitlines()
    assert "[info" in first and "from craig" in first and "[craig.tests]" in first and "case_id=c-1" in first
    assert "[warning" in second and "from uvicorn" in second and "[uvicorn.error]" in second
    assert not first.startswith("{")


@pytest.mark.parametrize(
    ("environ", "as_json"),
    [
        ({}, True),
        ({"CRAIG_LOG_FORMAT": "console"}, False),
        ({"CRAIG_LOG_FORMAT": "JSON"}, True),
        ({"CRAIG_LOG_JSON": "false"}, False),
        ({"CRAIG_LOG_JSON": "false", "CRAIG_LOG_FORMAT": "json"}, True),
        ({"CRAIG_LOG_JSON": "true", "CRAIG_LOG_FORMAT": "console"}, False),
    ],
)
def test_craig_log_format_chooses_the_format_and_craig_log_json_still_works(
    environ: dict[str, str], as_json: bool
) -> None:
    assert read_environment(environ).settings.logs_as_json is as_json


def test_an_unknown_log_format_is_refused_with_the_choices() -> None:
    with pytest.raises(SettingsError, match="json, console"):
        read_environment({"CRAIG_LOG_FORMAT": "xml"})


def test_a_json_line_is_ascii_and_carries_ids_and_times_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    case = uuid.UUID(int=7)
    with craig_logging("INFO"):
        structlog.get_logger("craig.tests").info("seen", case_id=case, at=datetime(2026, 1, 2, tzinfo=UTC), name="Zoë")
        structlog.get_logger("craig.tests").info("odd keys", counts={1: "x"}, thing=object())
    raw = capsys.readouterr().err
    assert raw.isascii() and "\\u00eb" in raw  # escaped, so no stream encoding refuses it
    first, second = json_lines(raw)
    assert first["case_id"] == str(case) and first["at"].startswith("2026-01-02T00:00:00") and first["name"] == "Zoë"
    assert second["counts"] == {"1": "x"} and second["thing"].startswith("<object object")


def test_the_timestamp_is_utc_with_six_digits_of_microseconds_and_follows_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from craig.entrypoints import logging as craig_logs

    clock = iter(
        [1_796_534_079_000_001_999, 1_796_534_079_999_999_999, 1_796_534_080_000_000_000, 1_796_534_079_5 * 10**8]
    )
    monkeypatch.setattr(craig_logs.time, "time_ns", lambda: next(clock))
    stamps = [craig_logs.utc_timestamp(None, "info", {})["timestamp"] for _ in range(4)]
    assert stamps == [
        "2026-12-06T05:14:39.000001Z",
        "2026-12-06T05:14:39.999999Z",
        "2026-12-06T05:14:40.000000Z",  # a new second is formatted anew, not taken from the last one
        "2026-12-06T05:14:39.500000Z",  # and a clock stepped back too
    ]
    for stamp in stamps:
        assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


def test_the_timestamp_is_the_wall_clock_now() -> None:
    from craig.entrypoints.logging import utc_timestamp

    before = datetime.now(UTC)
    stamped = datetime.fromisoformat(utc_timestamp(None, "info", {})["timestamp"])
    after = datetime.now(UTC)
    assert before - timedelta(microseconds=1) <= stamped <= after + timedelta(microseconds=1)


def test_a_console_traceback_shows_no_local_variables(capsys: pytest.CaptureFixture[str]) -> None:
    """The console renderer's default (rich's) printed every frame's locals: a partner's token,
    a job's payload. The traceback itself is kept."""

    def fails() -> None:
        token = "SECRET-TOKEN-XYZ"  # noqa: F841 -- the local the traceback must not show
        raise ValueError("the partner answered NaN")

    with craig_logging("INFO", json_lines=False):
        try:
            fails()
        except ValueError:
            structlog.get_logger("craig.test").exception("dispatch crashed")
    err = capsys.readouterr().err
    assert "dispatch crashed" in err and "ValueError: the partner answered NaN" in err and "Traceback" in err
    assert "SECRET-TOKEN-XYZ" not in err.replace('token = "SECRET-TOKEN-XYZ"', "")
