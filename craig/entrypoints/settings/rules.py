"""The startup rules: a setting that is unsafe or unusable stops startup with one line that
names the setting and the fix. Later features add theirs with :func:`rule`."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from craig.adapters.crypto.policy import key_problem
from craig.domain.constants import ATTACHMENT_SCAN_MIN_GRACE, REFERRAL_RESPONSE_TIME_MAX
from craig.entrypoints.settings.schema import Profile, Settings, SettingsError, split_csv

Rule = Callable[[Settings], str | None]
_RULES: list[Rule] = []


def rule(check: Rule) -> Rule:
    """Register a startup rule: return a one-line problem (setting + fix), or None when fine."""
    _RULES.append(check)
    return check


def validate(settings: Settings) -> None:
    """Raise :class:`SettingsError` with the first rule's problem, if any."""
    for check in _RULES:
        problem = check(settings)
        if problem:
            raise SettingsError(problem)


@rule
def _production_needs_dependencies(s: Settings) -> str | None:
    if s.profile is not Profile.PRODUCTION:
        return None
    missing = [
        name
        for name, value in (
            ("CRAIG_DATABASE__URL", s.database.url),
            ("CRAIG_BROKER__URL", s.broker.url),
            ("CRAIG_OBJECT_STORE__ENDPOINT", s.object_store.endpoint),
            ("CRAIG_OBJECT_STORE__ACCESS_KEY", s.object_store.access_key),
            ("CRAIG_OBJECT_STORE__SECRET_KEY", s.object_store.secret_key),
        )
        if not value
    ]
    if missing:
        return f"profile=production needs {', '.join(missing)}; set them or use CRAIG_PROFILE=embedded"
    return None


@rule
def _production_jwt(s: Settings) -> str | None:
    if s.profile is not Profile.PRODUCTION:
        return None
    if not s.auth.jwks_url and not s.auth.jwt_secret:
        return "profile=production needs CRAIG_AUTH__JWKS_URL (or CRAIG_AUTH__JWT_SECRET of >= 32 bytes)"
    if not s.auth.jwks_url and len(s.auth.jwt_secret.encode()) < 32:
        return (
            "CRAIG_AUTH__JWT_SECRET is shorter than 32 bytes, too weak for HS256 in production; "
            "use a longer random secret (e.g. `openssl rand -base64 48`) or CRAIG_AUTH__JWKS_URL"
        )
    return None


@rule
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
            "written; raise it (the default is 3600)"
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


@rule
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
