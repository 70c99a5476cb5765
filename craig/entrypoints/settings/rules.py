"""The startup rules: a setting that is unsafe or unusable stops startup with one line that
names the setting and the fix. Later features add theirs with :func:`rule`.

A command checks only what it works with (:class:`Needs`): ``craig db upgrade`` needs the
database URL, not the broker's, the object store's, the token or the field-encryption settings.
"""

from __future__ import annotations

import enum
import ipaddress
import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import overload

import attrs

from craig.adapters.crypto.policy import key_problem
from craig.domain.constants import (
    ATTACHMENT_SCAN_GRACE,
    ATTACHMENT_SCAN_MIN_GRACE,
    IDEMPOTENCY_MIN_RETENTION,
    INBOX_MIN_RETENTION,
    JWT_SECRET_MIN_BYTES,
    REFERRAL_RESPONSE_TIME_MAX,
)
from craig.entrypoints.settings.schema import Profile, Settings, SettingsError, split_csv

Rule = Callable[[Settings], str | None]


class Needs(enum.Flag):
    """What a command works with. Rules about something it does not need are not checked."""

    DATABASE = enum.auto()
    BROKER = enum.auto()
    OBJECT_STORE = enum.auto()
    TOKENS = enum.auto()
    FIELD_ENCRYPTION = enum.auto()
    ALL = DATABASE | BROKER | OBJECT_STORE | TOKENS | FIELD_ENCRYPTION


_RULES: list[tuple[Rule, Needs | None]] = []

#: What profile=production must be told, per dependency.
_PRODUCTION_SETTINGS: tuple[tuple[Needs, str, Callable[[Settings], str]], ...] = (
    (Needs.DATABASE, "CRAIG_DATABASE__URL", lambda s: s.database.url),
    (Needs.BROKER, "CRAIG_BROKER__URL", lambda s: s.broker.url),
    (Needs.OBJECT_STORE, "CRAIG_OBJECT_STORE__ENDPOINT", lambda s: s.object_store.endpoint),
    (Needs.OBJECT_STORE, "CRAIG_OBJECT_STORE__ACCESS_KEY", lambda s: s.object_store.access_key),
    (Needs.OBJECT_STORE, "CRAIG_OBJECT_STORE__SECRET_KEY", lambda s: s.object_store.secret_key),
)


@overload
def rule(check: Rule, /) -> Rule: ...
@overload
def rule(*, about: Needs) -> Callable[[Rule], Rule]: ...
def rule(check: Rule | None = None, /, *, about: Needs | None = None) -> Rule | Callable[[Rule], Rule]:
    """Register a startup rule: return a one-line problem (setting + fix), or None when fine.
    ``@rule(about=Needs.X)`` checks it only for commands that need X."""

    def register(check: Rule) -> Rule:
        _RULES.append((check, about))
        return check

    return register if check is None else register(check)


def validate(settings: Settings, needs: Needs = Needs.ALL) -> None:
    """Raise :class:`SettingsError` with the first problem, if any, among the rules about what
    ``needs`` names (and the rules about no dependency in particular)."""
    problem = _production_needs(settings, needs)
    if problem:
        raise SettingsError(problem)
    for check, about in _RULES:
        problem = None if about is not None and not about & needs else check(settings)
        if problem:
            raise SettingsError(problem)


def _production_needs(s: Settings, needs: Needs) -> str | None:
    if s.profile is not Profile.PRODUCTION:
        return None
    missing = [name for about, name, value in _PRODUCTION_SETTINGS if about & needs and not value(s)]
    if missing:
        them = "them" if len(missing) > 1 else "it"
        return f"profile=production needs {', '.join(missing)}; set {them} or use CRAIG_PROFILE=embedded"
    return None


@rule(about=Needs.TOKENS)
def _production_jwt(s: Settings) -> str | None:
    if s.profile is not Profile.PRODUCTION:
        return None
    if not s.auth.jwks_url and not s.auth.jwt_secret:
        return (
            "profile=production needs CRAIG_AUTH__JWKS_URL "
            f"(or CRAIG_AUTH__JWT_SECRET of >= {JWT_SECRET_MIN_BYTES} bytes)"
        )
    if not s.auth.jwks_url and len(s.auth.jwt_secret.encode()) < JWT_SECRET_MIN_BYTES:
        return (
            f"CRAIG_AUTH__JWT_SECRET is shorter than {JWT_SECRET_MIN_BYTES} bytes, too weak for HS256 in production; "
            "use a longer random secret (e.g. `openssl rand -base64 48`) or CRAIG_AUTH__JWKS_URL"
        )
    return None


@rule(about=Needs.TOKENS)
def _jwks_timing(s: Settings) -> str | None:
    for name, value in (
        ("CRAIG_AUTH__JWKS_REFRESH_SECONDS", s.auth.jwks_refresh_seconds),
        ("CRAIG_AUTH__JWKS_FETCH_TIMEOUT_SECONDS", s.auth.jwks_fetch_timeout_seconds),
    ):
        if value <= 0:
            return f"{name} must be positive (got {value:g}); remove it to use the default"
    return None


@rule
def _cors_wildcard_with_credentials(s: Settings) -> str | None:
    if s.http.cors_allow_credentials and "*" in split_csv(s.http.cors_origins):
        return (
            "CRAIG_HTTP__CORS_ORIGINS='*' with CRAIG_HTTP__CORS_ALLOW_CREDENTIALS=true lets any site "
            "act as the user; list the allowed origins or turn credentials off"
        )
    return None


#: A duration setting longer than this is a typo ("keep for ever" fits in it), and a purge's
#: cut-off (now minus the retention) stays a date Python holds.
_LONGEST_DURATION = timedelta(days=365_000)
#: Duration settings by the unit their name ends in, in seconds.
_UNITS = {"_ms": 0.001, "_seconds": 1.0, "_hours": 3600.0, "_days": 86400.0}
#: Durations that may be 0: no clock skew tolerated; a duplicate that does not wait; no
#: statement timeout (PostgreSQL's meaning of 0); published events purged at the next pass;
#: a failed delivery retried at once (development).
_MAY_BE_ZERO = frozenset(
    {
        "CRAIG_AUTH__LEEWAY_SECONDS",
        "CRAIG_IDEMPOTENCY__WAIT_CEILING_SECONDS",
        "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS",
        "CRAIG_OUTBOX__RETENTION_DAYS",
        "CRAIG_INBOX__BACKOFF_BASE_SECONDS",
        "CRAIG_INBOX__BACKOFF_CAP_SECONDS",
    }
)
#: PostgreSQL takes a statement_timeout up to this (an int4 of milliseconds).
_LONGEST_STATEMENT_TIMEOUT_MS = 2_147_483_647
#: Sections whose durations matter only to commands that use that dependency.
_SECTION_NEEDS = {
    "auth": Needs.TOKENS,
    "database": Needs.DATABASE,
    "broker": Needs.BROKER,
    "object_store": Needs.OBJECT_STORE,
}


@attrs.frozen
class DurationSetting:
    section: str
    name: str
    value: float
    #: Its unit, in seconds.
    unit: float


def duration_settings(s: Settings) -> Iterator[DurationSetting]:
    """Every duration setting: found by the unit its name ends in."""
    for section in attrs.fields(type(s)):
        group = getattr(s, section.name)
        if not attrs.has(type(group)):
            continue
        for field in attrs.fields(type(group)):
            unit = next((seconds for suffix, seconds in _UNITS.items() if field.name.endswith(suffix)), None)
            if unit is not None:
                name = f"CRAIG_{section.name}__{field.name}".upper()
                yield DurationSetting(section.name, name, getattr(group, field.name), unit)


def _shown(number: float) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"


def _duration_problem(setting: DurationSetting) -> str | None:
    name, value = setting.name, setting.value
    if value < 0 or (value == 0 and name not in _MAY_BE_ZERO):
        least = "0 or more" if name in _MAY_BE_ZERO else "positive"
        return f"{name} must be {least} (got {_shown(value)}); remove it to use the default"
    longest: float = round(_LONGEST_DURATION.total_seconds() / setting.unit)
    if name == "CRAIG_DATABASE__STATEMENT_TIMEOUT_MS":
        longest = _LONGEST_STATEMENT_TIMEOUT_MS
    if value > longest:
        return f"{name} must be at most {_shown(longest)} (got {_shown(value)})"
    return None


def _durations_of(sections: Callable[[str], bool]) -> Rule:
    def check(s: Settings) -> str | None:
        """A negative or zero interval busy-loops or purges at once (an idempotency retention
        of 0 forgot every key a minute later, so a client's retry ran twice); an absurd one
        overflows."""
        for setting in duration_settings(s):
            if sections(setting.section) and (problem := _duration_problem(setting)):
                return problem
        return None

    return check


def _one_section(chosen: str) -> Callable[[str], bool]:
    return lambda section: section == chosen


rule(_durations_of(lambda section: section not in _SECTION_NEEDS))
for _section, _needs in _SECTION_NEEDS.items():
    rule(about=_needs)(_durations_of(_one_section(_section)))


@rule
def _retention_long_enough_to_deduplicate(s: Settings) -> str | None:
    if s.idempotency.retention_hours < IDEMPOTENCY_MIN_RETENTION.total_seconds() / 3600:
        return (
            f"CRAIG_IDEMPOTENCY__RETENTION_HOURS must be at least {IDEMPOTENCY_MIN_RETENTION.total_seconds() / 3600:g} "
            f"(got {s.idempotency.retention_hours:g}): a client retrying with the same Idempotency-Key after "
            "its slot is purged has the request run again"
        )
    if s.inbox.retention_days < INBOX_MIN_RETENTION.total_seconds() / 86400:
        return (
            f"CRAIG_INBOX__RETENTION_DAYS must be at least {INBOX_MIN_RETENTION.total_seconds() / 86400:g} "
            f"(got {s.inbox.retention_days:g}): an event delivered again after its inbox row is purged is "
            "handled again"
        )
    if s.inbox.backoff_cap_seconds < s.inbox.backoff_base_seconds:
        return (
            f"CRAIG_INBOX__BACKOFF_CAP_SECONDS ({s.inbox.backoff_cap_seconds:g}) must not be shorter than "
            f"CRAIG_INBOX__BACKOFF_BASE_SECONDS ({s.inbox.backoff_base_seconds:g})"
        )
    return None


@rule
def _log_level(s: Settings) -> str | None:
    # The names the logging configuration resolves (WARN and FATAL too), any case.
    if s.log_level.upper() not in logging.getLevelNamesMapping():
        return f"CRAIG_LOG_LEVEL={s.log_level!r} is not a log level; use one of: DEBUG, INFO, WARNING, ERROR, CRITICAL"
    return None


@rule
def _loser_wait_within_claim_ttl(s: Settings) -> str | None:
    i = s.idempotency
    if i.claim_ttl_seconds <= 0:
        return "CRAIG_IDEMPOTENCY__CLAIM_TTL_SECONDS must be positive; the default is 30"
    if not 0 <= i.wait_ceiling_seconds <= i.claim_ttl_seconds:
        return (
            "CRAIG_IDEMPOTENCY__WAIT_CEILING_SECONDS must lie between 0 and "
            f"CRAIG_IDEMPOTENCY__CLAIM_TTL_SECONDS ({i.claim_ttl_seconds:g}); lower it"
        )
    return None


@rule
def _positive_limits(s: Settings) -> str | None:
    for name, value in (
        ("CRAIG_HTTP__MAX_BODY_BYTES", s.http.max_body_bytes),
        ("CRAIG_ATTACHMENTS__MAX_BYTES", s.attachments.max_bytes),
        ("CRAIG_OUTBOX__BATCH_SIZE", s.outbox.batch_size),
        ("CRAIG_OUTBOX__RELAYS", s.outbox.relays),
        ("CRAIG_DATABASE__POOL_SIZE", s.database.pool_size),
    ):
        if value <= 0:
            return f"{name} must be positive (got {value}); remove it to use the default"
    return None


@rule
def _attachment_scanner_timing(s: Settings) -> str | None:
    a = s.attachments
    if a.scan_interval_seconds <= 0:
        return f"CRAIG_ATTACHMENTS__SCAN_INTERVAL_SECONDS must be positive (got {a.scan_interval_seconds:g})"
    if a.scan_grace_seconds < ATTACHMENT_SCAN_MIN_GRACE.total_seconds():
        return (
            f"CRAIG_ATTACHMENTS__SCAN_GRACE_SECONDS ({a.scan_grace_seconds:g}) is shorter than "
            f"{ATTACHMENT_SCAN_MIN_GRACE.total_seconds():g}: the scanner would remove uploads still being "
            f"written; raise it (the default is {ATTACHMENT_SCAN_GRACE.total_seconds():g})"
        )
    return None


@rule
def _exchange_limits(s: Settings) -> str | None:
    e = s.exchange
    for name, value in (
        ("CRAIG_EXCHANGE__CONNECT_TIMEOUT_SECONDS", e.connect_timeout_seconds),
        ("CRAIG_EXCHANGE__READ_TIMEOUT_SECONDS", e.read_timeout_seconds),
        ("CRAIG_EXCHANGE__MAX_CONNECTIONS", e.max_connections),
        ("CRAIG_EXCHANGE__MAX_CONCURRENCY", e.max_concurrency),
        ("CRAIG_EXCHANGE__RETENTION_DAYS", e.retention_days),
    ):
        if value <= 0:
            return f"{name} must be positive (got {value}); remove it to use the default"
    if e.prefetch < 0:
        return f"CRAIG_EXCHANGE__PREFETCH must be 0 or more (got {e.prefetch}); remove it to use the default"
    if e.lease_seconds <= e.read_timeout_seconds + e.connect_timeout_seconds:
        return (
            f"CRAIG_EXCHANGE__LEASE_SECONDS ({e.lease_seconds:g}) must exceed the partner connect + read "
            "timeouts, or a slow but live dispatch would be sent twice; raise it or lower the timeouts"
        )
    return None


@rule
def _captcha_needs_a_secret(s: Settings) -> str | None:
    secret = s.intake.captcha_secret.strip()
    if s.intake.require_captcha and secret in ("", "disabled"):
        shown = "'disabled'" if secret else "empty"
        return f"require_captcha=true but captcha_secret is {shown} — set CRAIG_INTAKE__CAPTCHA_SECRET to a real secret"
    if s.intake.require_captcha and not s.intake.captcha_verify_url.startswith(("https://", "http://")):
        return "CRAIG_INTAKE__CAPTCHA_VERIFY_URL must be an http(s) URL of the provider's siteverify endpoint"
    return None


@rule
def _intake_rate_limit(s: Settings) -> str | None:
    if s.intake.rate_limit_per_minute < 1:
        return (
            f"CRAIG_INTAKE__RATE_LIMIT_PER_MINUTE must be at least 1 (got {s.intake.rate_limit_per_minute}); "
            "remove it to use the default of 10"
        )
    return None


@rule
def _rule_cache_max_age(s: Settings) -> str | None:
    if s.rules.cache_max_age_seconds <= 0:
        return (
            f"CRAIG_RULES__CACHE_MAX_AGE_SECONDS must be positive (got {s.rules.cache_max_age_seconds:g}); "
            "remove it to use the default of 60"
        )
    return None


@rule
def _screening_response_times(s: Settings) -> str | None:
    for name in ("urgent", "high", "medium", "low"):
        hours = getattr(s.screening, f"{name}_response_hours")
        longest = REFERRAL_RESPONSE_TIME_MAX.total_seconds() / 3600
        if not 0 < hours <= longest:
            return (
                f"CRAIG_SCREENING__{name.upper()}_RESPONSE_HOURS must be more than 0 and at most "
                f"{longest:g} (got {hours:g}); remove it to use the default"
            )
    return None


@rule(about=Needs.FIELD_ENCRYPTION)
def _field_encryption_key(s: Settings) -> str | None:
    if not s.field_encryption_key.strip() and s.profile is not Profile.PRODUCTION:
        return None  # memory and embedded generate a key into $CRAIG_DATA_DIR/secrets at startup
    return key_problem(s.encryption_mode.value, s.field_encryption_key)


@rule
def _trusted_proxies_are_addresses(s: Settings) -> str | None:
    for entry in split_csv(s.http.trusted_proxies):
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return (
                f"CRAIG_HTTP__TRUSTED_PROXIES has {entry!r}, which is not an IP address or network; "
                "list the proxies' addresses, comma-separated"
            )
    return None


@rule
def _audit_retention(s: Settings) -> str | None:
    if s.audit.retention_days < 1:
        return (
            f"CRAIG_AUDIT__RETENTION_DAYS must be at least 1 (got {s.audit.retention_days}); "
            "remove it to keep the default of 2557 days (7 years)"
        )
    return None


@rule
def _metrics_ports(s: Settings) -> str | None:
    for name, value in (
        ("CRAIG_HTTP__METRICS_PORT", s.http.metrics_port),
        ("CRAIG_WORKERS__METRICS_PORT", s.workers.metrics_port),
    ):
        if not 0 <= value <= 65535:
            return f"{name} must lie between 0 (off) and 65535 (got {value})"
    if s.http.metrics_port and s.http.metrics_port == s.http.port:
        return "CRAIG_HTTP__METRICS_PORT must differ from CRAIG_HTTP__PORT; choose another port or 0 (on the API port)"
    return None


@rule
def _audit_always_recorded_in_production(s: Settings) -> str | None:
    if s.profile is Profile.PRODUCTION and not s.audit.enabled:
        return (
            "CRAIG_AUDIT__ENABLED=false turns the audit trail off, which is for benchmarks and tests only; "
            "profile=production always records it: remove CRAIG_AUDIT__ENABLED"
        )
    return None
