"""Numbers a setting cannot mean are refused at startup in one line naming the variable: a
float that is not finite (NaN passed every ``<= 0`` rule and crashed later with a traceback),
a zero or negative duration (an outbox poll of 0 busy-looped; an idempotency retention of 0
purged every key a minute later, so a client's retry ran twice), one too long for a timedelta,
and an unknown log level (which fell back to INFO in silence)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.entrypoints.settings import Settings, SettingsError, load_settings, read_environment
from craig.entrypoints.settings.rules import Needs, duration_settings, validate

pytestmark = pytest.mark.unit

BASE = {"CRAIG_PROFILE": "memory"}
DURATIONS = sorted(setting.name for setting in duration_settings(Settings()))
MAY_BE_ZERO = {
    "CRAIG_AUTH__LEEWAY_SECONDS",
    "CRAIG_IDEMPOTENCY__WAIT_CEILING_SECONDS",
    "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS",
    "CRAIG_OUTBOX__RETENTION_DAYS",
    "CRAIG_INBOX__BACKOFF_BASE_SECONDS",
    "CRAIG_INBOX__BACKOFF_CAP_SECONDS",
}


def refusal(**environ: str) -> str:
    with pytest.raises(SettingsError) as refused:
        load_settings({**BASE, **environ})
    return str(refused.value)


def test_the_walk_finds_the_duration_settings() -> None:
    assert {
        "CRAIG_OUTBOX__POLL_INTERVAL_SECONDS",
        "CRAIG_IDEMPOTENCY__RETENTION_HOURS",
        "CRAIG_INBOX__RETENTION_DAYS",
        "CRAIG_EXCHANGE__LEASE_SECONDS",
        "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS",
    } <= set(DURATIONS)


@pytest.mark.parametrize("raw", ["nan", "NaN", "inf", "-inf", "Infinity"])
@pytest.mark.parametrize(
    "name",
    ["CRAIG_EXCHANGE__LEASE_SECONDS", "CRAIG_ATTACHMENTS__SCAN_INTERVAL_SECONDS", "CRAIG_OUTBOX__RETENTION_DAYS"],
)
def test_a_number_that_is_not_finite_is_refused(name: str, raw: str) -> None:
    assert refusal(**{name: raw}) == f"{name}={raw!r} is not a finite number; set it to a float"


@pytest.mark.parametrize("name", DURATIONS)
def test_no_duration_may_be_negative_and_only_a_few_may_be_zero(name: str) -> None:
    assert refusal(**{name: "-1"}).startswith(f"{name} must be ")
    if name in MAY_BE_ZERO:
        below = {"CRAIG_INBOX__BACKOFF_BASE_SECONDS": "0"} if name == "CRAIG_INBOX__BACKOFF_CAP_SECONDS" else {}
        load_settings({**BASE, **below, name: "0"})
    else:
        assert refusal(**{name: "0"}) == f"{name} must be positive (got 0); remove it to use the default"


@given(st.sampled_from(DURATIONS))
def test_a_duration_past_a_century_is_refused_before_it_overflows(name: str) -> None:
    assert " must be at most " in refusal(**{name: "1" + "0" * 300})


def test_retentions_that_would_forget_what_deduplicates_are_refused() -> None:
    assert refusal(CRAIG_IDEMPOTENCY__RETENTION_HOURS="0.5").startswith(
        "CRAIG_IDEMPOTENCY__RETENTION_HOURS must be at least 1 (got 0.5)"
    )
    assert refusal(CRAIG_INBOX__RETENTION_DAYS="0.5").startswith("CRAIG_INBOX__RETENTION_DAYS must be at least 1")
    assert "CRAIG_INBOX__BACKOFF_CAP_SECONDS (1) must not be shorter" in refusal(
        CRAIG_INBOX__BACKOFF_BASE_SECONDS="5", CRAIG_INBOX__BACKOFF_CAP_SECONDS="1"
    )
    load_settings({**BASE, "CRAIG_IDEMPOTENCY__RETENTION_HOURS": "1", "CRAIG_INBOX__RETENTION_DAYS": "1"})


def test_an_unknown_log_level_is_refused_and_known_ones_in_any_case_are_taken() -> None:
    assert refusal(CRAIG_LOG_LEVEL="bogus") == (
        "CRAIG_LOG_LEVEL='bogus' is not a log level; use one of: DEBUG, INFO, WARNING, ERROR, CRITICAL"
    )
    for spelling in ("debug", "Warning", "warn", "FATAL"):  # what the logging configuration resolves
        assert load_settings({**BASE, "CRAIG_LOG_LEVEL": spelling}).log_level == spelling


def test_keeping_for_ever_fits_and_the_statement_timeout_stops_where_postgresql_does() -> None:
    load_settings({**BASE, "CRAIG_AUDIT__RETENTION_DAYS": "99999"})  # "for ever", as an operator writes it
    load_settings({**BASE, "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS": "2147483647"})
    assert refusal(CRAIG_DATABASE__STATEMENT_TIMEOUT_MS="2147483648") == (
        "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS must be at most 2147483647 (got 2147483648)"
    )


def test_a_command_is_not_refused_for_the_durations_of_a_dependency_it_does_not_use() -> None:
    """``craig db upgrade`` needs the database: a token setting it never reads must not stop it,
    as the rules about tokens already did not."""
    loaded = read_environment({**BASE, "CRAIG_AUTH__JWKS_REFRESH_SECONDS": "0"})
    validate(loaded.settings, Needs.DATABASE)
    with pytest.raises(SettingsError, match="CRAIG_AUTH__JWKS_REFRESH_SECONDS must be positive"):
        validate(loaded.settings, Needs.TOKENS)
    broken_database = read_environment({**BASE, "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS": "-1"})
    validate(broken_database.settings, Needs.TOKENS)
    with pytest.raises(SettingsError, match="CRAIG_DATABASE__STATEMENT_TIMEOUT_MS must be 0 or more"):
        validate(broken_database.settings, Needs.DATABASE)
