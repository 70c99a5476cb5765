"""Settings from environment variables: prefix ``CRAIG_``, ``__`` for nesting.

``CRAIG_DATABASE__URL`` sets ``Settings.database.url``; ``CRAIG_PROFILE`` sets
``Settings.profile``. Every field has a default and a help text; ``craig config`` prints the
reference. A setting that is unsafe or unusable stops startup with one line that names the
setting and the fix (:func:`validate`); later features add rules with :func:`rule`.
"""

from __future__ import annotations

import difflib
import enum
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from craig.domain.constants import (
    ATTACHMENT_MAX_BYTES,
    ATTACHMENT_SCAN_GRACE,
    ATTACHMENT_SCAN_INTERVAL,
    ATTACHMENT_SCAN_MIN_GRACE,
    EXCHANGE_RETENTION,
    IDEMPOTENCY_CLAIM_TTL,
    IDEMPOTENCY_LOSER_WAIT_CEILING,
    IDEMPOTENCY_MAX_STORED_BODY_BYTES,
    IDEMPOTENCY_RETENTION,
    INBOX_BACKOFF_BASE,
    INBOX_BACKOFF_CAP,
    INBOX_RETENTION,
    JWKS_FETCH_TIMEOUT,
    JWKS_REFRESH_INTERVAL,
    OUTBOX_BATCH_SIZE,
    OUTBOX_POLL_INTERVAL,
    OUTBOX_RETENTION,
    RULE_CACHE_MAX_AGE,
    SEND_LEASE,
    SEND_MAX_CONCURRENCY,
)

PREFIX = "CRAIG_"
_IGNORED_PREFIXES = ("CRAIG_TEST_",)  # the test suite's own knobs


class SettingsError(Exception):
    """One line: which setting is wrong and how to fix it."""


class Profile(enum.StrEnum):
    MEMORY = "memory"
    EMBEDDED = "embedded"
    PRODUCTION = "production"


class EncryptionMode(enum.StrEnum):
    REQUIRED = "required"
    OPTIONAL = "optional"


def _hours(value: timedelta) -> float:
    return value.total_seconds() / 3600


def _days(value: timedelta) -> float:
    return value.total_seconds() / 86400


def _help(text: str, default: Any = attrs.NOTHING, **kw: Any) -> Any:
    return attrs.field(default=default, metadata={"help": text}, **kw)


@attrs.define
class HttpSettings:
    host: str = _help("Interface `craig serve` binds.", "127.0.0.1")
    port: int = _help("Port `craig serve` listens on.", 8000)
    max_body_bytes: int = _help(
        "Largest request body accepted (413 above it). Upload routes have their own limit.", 1024 * 1024
    )
    cors_origins: str = _help("Comma-separated allowed CORS origins; empty disables CORS; `*` any.", "")
    cors_allow_credentials: bool = _help("Allow credentials in CORS requests (never with `*`).", False)
    trusted_proxies: str = _help("Comma-separated proxy IPs whose X-Forwarded-For is trusted for client IPs.", "")


@attrs.define
class AuthSettings:
    jwt_secret: str = _help("HS256 shared secret (>= 32 bytes in production). Embedded generates one.", "", repr=False)
    jwks_url: str = _help("JWKS URL for RS256/ES256 tokens (production). Disables HS256.", "")
    jwks_refresh_seconds: float = _help(
        "The JWKS is fetched at most this often: for an unknown `kid`, or (in the background) keys this old.",
        JWKS_REFRESH_INTERVAL.total_seconds(),
    )
    jwks_fetch_timeout_seconds: float = _help(
        "Longest one JWKS fetch may take; meanwhile the known keys keep working.", JWKS_FETCH_TIMEOUT.total_seconds()
    )
    issuer: str = _help("Required `iss` claim.", "craig")
    audience: str = _help("Required `aud` claim.", "craig-api")
    leeway_seconds: int = _help("Clock skew tolerated on exp/nbf.", 30)


@attrs.define
class DatabaseSettings:
    url: str = _help("PostgreSQL URL (production), e.g. postgresql://craig@db:5432/craig.", "", repr=False)
    pool_size: int = _help("Connections kept per process.", 10)
    max_overflow: int = _help("Extra connections allowed under burst.", 20)
    statement_timeout_ms: int = _help("Server-side statement timeout.", 30000)
    embedded_port: int = _help("TCP port of the embedded server; 0 = unix socket only.", 0)


@attrs.define
class BrokerSettings:
    url: str = _help("AMQP URL (production), e.g. amqp://craig:secret@rabbit:5672/craig.", "", repr=False)
    events_exchange: str = _help("Topic exchange events are published to.", "craig.events")
    dlx_exchange: str = _help("Dead-letter exchange for poison messages.", "craig.dlx")
    queue_prefix: str = _help("Prefix of every queue Craig declares.", "craig")


@attrs.define
class ObjectStoreSettings:
    endpoint: str = _help("S3 endpoint host:port (production).", "")
    access_key: str = _help("S3 access key.", "", repr=False)
    secret_key: str = _help("S3 secret key.", "", repr=False)
    bucket: str = _help("Bucket holding attachments (created when missing).", "craig-attachments")
    secure: bool = _help("Use HTTPS to reach the endpoint.", True)
    region: str = _help("S3 region, if the endpoint needs one.", "")


@attrs.define
class IdempotencySettings:
    claim_ttl_seconds: float = _help(
        "How long a claim is owned before it may be recovered.", IDEMPOTENCY_CLAIM_TTL.total_seconds()
    )
    wait_ceiling_seconds: float = _help(
        "How long a concurrent duplicate waits (<= claim TTL).", IDEMPOTENCY_LOSER_WAIT_CEILING.total_seconds()
    )
    max_body_bytes: int = _help("Largest response body stored for replay.", IDEMPOTENCY_MAX_STORED_BODY_BYTES)
    retention_hours: float = _help("Slots older than this are purged.", _hours(IDEMPOTENCY_RETENTION))


@attrs.define
class OutboxSettings:
    batch_size: int = _help("Events a relay claims per batch.", OUTBOX_BATCH_SIZE)
    poll_interval_seconds: float = _help(
        "Relay poll interval when no NOTIFY arrives.", OUTBOX_POLL_INTERVAL.total_seconds()
    )
    retention_days: float = _help("Published events are purged after this.", _days(OUTBOX_RETENTION))


@attrs.define
class InboxSettings:
    retention_days: float = _help("Processed inbox rows are purged after this.", _days(INBOX_RETENTION))
    backoff_base_seconds: float = _help(
        "First redelivery delay; doubles per retry (5 retries).", INBOX_BACKOFF_BASE.total_seconds()
    )
    backoff_cap_seconds: float = _help("Longest redelivery delay.", INBOX_BACKOFF_CAP.total_seconds())


@attrs.define
class AttachmentSettings:
    max_bytes: int = _help("Largest attachment accepted (413 above it).", ATTACHMENT_MAX_BYTES)
    scan_grace_seconds: float = _help(
        "Pending uploads younger than this are left alone.", ATTACHMENT_SCAN_GRACE.total_seconds()
    )
    scan_interval_seconds: float = _help("How often the scanner reconciles.", ATTACHMENT_SCAN_INTERVAL.total_seconds())


@attrs.define
class ExchangeSettings:
    connect_timeout_seconds: float = _help("Partner HTTP connect timeout.", 5.0)
    read_timeout_seconds: float = _help("Partner HTTP read timeout.", 30.0)
    max_connections: int = _help("Partner HTTP connection pool size.", 50)
    max_concurrency: int = _help("Dispatches one worker runs at once.", SEND_MAX_CONCURRENCY)
    prefetch: int = _help("Jobs one worker claims ahead of its free dispatch slots (0: none).", SEND_MAX_CONCURRENCY)
    lease_seconds: float = _help("How long a claimed job is owned by its worker.", SEND_LEASE.total_seconds())
    retention_days: float = _help(
        "Transactions whose every job was sent longer ago than this are purged, jobs included.",
        _days(EXCHANGE_RETENTION),
    )


@attrs.define
class IntakeSettings:
    require_captcha: bool = _help("Require a captcha token on public intake.", False)
    captcha_secret: str = _help("Captcha siteverify secret, or `disabled`.", "disabled", repr=False)
    captcha_verify_url: str = _help("hCaptcha/Turnstile-compatible siteverify URL.", "https://hcaptcha.com/siteverify")
    rate_limit_per_minute: int = _help("Referrals accepted per client IP per minute.", 10)


@attrs.define
class RulesSettings:
    cache_max_age_seconds: float = _help(
        "Longest a decision-cache entry is served before the database is read again.",
        RULE_CACHE_MAX_AGE.total_seconds(),
    )


@attrs.define
class WorkerSettings:
    in_process: bool | None = _help(
        "Run background workers inside `craig serve` (default: yes for memory/embedded).", None
    )


@attrs.define
class Settings:
    profile: Profile = _help("memory, embedded or production.", Profile.EMBEDDED, converter=Profile)
    data_dir: Path = _help("Where the embedded profile keeps everything.", Path(".craig"), converter=Path)
    log_level: str = _help("Log level.", "INFO")
    log_json: bool = _help("JSON logs (true) or console logs (false).", True)
    instance_id: str = _help("This process's id in events; default: random.", "")
    encryption_mode: EncryptionMode = _help(
        "required: refuse to start without a key; optional: plaintext when no key.",
        EncryptionMode.REQUIRED,
        converter=EncryptionMode,
    )
    field_encryption_key: str = _help(
        "Base64 of 32 bytes (AES-256-GCM); `id:key,id:key` for rotation, newest first.", "", repr=False
    )
    http: HttpSettings = attrs.field(factory=HttpSettings)
    auth: AuthSettings = attrs.field(factory=AuthSettings)
    database: DatabaseSettings = attrs.field(factory=DatabaseSettings)
    broker: BrokerSettings = attrs.field(factory=BrokerSettings)
    object_store: ObjectStoreSettings = attrs.field(factory=ObjectStoreSettings)
    idempotency: IdempotencySettings = attrs.field(factory=IdempotencySettings)
    outbox: OutboxSettings = attrs.field(factory=OutboxSettings)
    inbox: InboxSettings = attrs.field(factory=InboxSettings)
    attachments: AttachmentSettings = attrs.field(factory=AttachmentSettings)
    exchange: ExchangeSettings = attrs.field(factory=ExchangeSettings)
    intake: IntakeSettings = attrs.field(factory=IntakeSettings)
    rules: RulesSettings = attrs.field(factory=RulesSettings)
    workers: WorkerSettings = attrs.field(factory=WorkerSettings)

    @property
    def run_workers_in_process(self) -> bool:
        if self.workers.in_process is not None:
            return self.workers.in_process
        return self.profile is not Profile.PRODUCTION


# --- loading ----------------------------------------------------------------------------------


def _is_section(field: attrs.Attribute[Any]) -> bool:
    return isinstance(field.type, type) and attrs.has(field.type)


def _resolved_fields(cls: type) -> tuple[attrs.Attribute[Any], ...]:
    return attrs.fields(attrs.resolve_types(cls, globals(), localns=None))


def _env_names(cls: type = Settings, prefix: str = PREFIX) -> Iterator[tuple[str, tuple[str, ...]]]:
    for field in _resolved_fields(cls):
        if _is_section(field):
            for name, path in _env_names(field.type, f"{prefix}{field.name.upper()}__"):
                yield name, (field.name, *path)
        else:
            yield f"{prefix}{field.name.upper()}", (field.name,)


def _convert(raw: str, annotation: Any, name: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if raw.strip() == "":
            return None
        return _convert(raw, args[0], name)
    if annotation is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingsError(f"{name}={raw!r} is not a boolean; use true or false")
    if annotation in (int, float):
        try:
            return annotation(raw.strip())
        except ValueError:
            raise SettingsError(f"{name}={raw!r} is not a number; set it to a {annotation.__name__}") from None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        allowed = ", ".join(str(m.value) for m in annotation)
        try:
            return annotation(raw.strip().lower())
        except ValueError:
            raise SettingsError(f"{name}={raw!r} is not valid; use one of: {allowed}") from None
    if annotation is Path:
        return Path(raw)
    return raw


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from the environment (``os.environ`` by default), then validate."""
    env = dict(os.environ if environ is None else environ)
    known = dict(_env_names())
    values: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(PREFIX) or name.startswith(_IGNORED_PREFIXES):
            continue
        if name not in known:
            hint = difflib.get_close_matches(name, known, n=1)
            fix = f"did you mean {hint[0]}?" if hint else "see `craig config` for the settings"
            raise SettingsError(f"{name} is not a Craig setting; {fix}")
        values[name] = raw
    settings = _build(Settings, PREFIX, values)
    validate(settings)
    return settings


def _build(cls: type, prefix: str, values: Mapping[str, str]) -> Any:
    kwargs: dict[str, Any] = {}
    for field in _resolved_fields(cls):
        name = f"{prefix}{field.name.upper()}"
        if _is_section(field):
            kwargs[field.name] = _build(field.type, f"{name}__", values)
        elif name in values:
            kwargs[field.name] = _convert(values[name], field.type, name)
    return cls(**kwargs)


def reference() -> Iterator[tuple[str, str, str]]:
    """(variable, default, help) for every setting: the configuration reference."""

    def walk(cls: type, prefix: str, instance: Any) -> Iterator[tuple[str, str, str]]:
        for field in _resolved_fields(cls):
            name = f"{prefix}{field.name.upper()}"
            value = getattr(instance, field.name)
            if _is_section(field):
                yield from walk(field.type, f"{name}__", value)
            else:
                shown = "" if value is None else str(value.value if isinstance(value, enum.Enum) else value)
                yield name, shown, field.metadata.get("help", "")

    yield from walk(Settings, PREFIX, Settings())


# --- validation -------------------------------------------------------------------------------

Rule = Callable[[Settings], str | None]
_RULES: list[Rule] = []


def rule(check: Rule) -> Rule:
    """Register a startup rule: return a one-line problem (setting + fix), or None when fine."""
    _RULES.append(check)
    return check


def validate(settings: Settings) -> None:
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
    if s.http.cors_allow_credentials and "*" in _split(s.http.cors_origins):
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


# --- cases, contacts, attachments (issue 5) -------------------------------------------------------
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


# --- partner exchange (issue 7) ------------------------------------------------------------------
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


# --- intake, captcha, field encryption (issue 8) -------------------------------------------------
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
def _field_encryption_key(s: Settings) -> str | None:
    from craig.adapters.crypto.policy import key_problem

    if not s.field_encryption_key.strip() and s.profile is not Profile.PRODUCTION:
        return None  # memory and embedded generate a key into $CRAIG_DATA_DIR/secrets at startup
    return key_problem(s.encryption_mode.value, s.field_encryption_key)


@rule
def _trusted_proxies_are_addresses(s: Settings) -> str | None:
    import ipaddress

    for entry in _split(s.http.trusted_proxies):
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return (
                f"CRAIG_HTTP__TRUSTED_PROXIES has {entry!r}, which is not an IP address or network; "
                "list the proxies' addresses, comma-separated"
            )
    return None


def _split(csv: str) -> list[str]:
    return [part.strip() for part in csv.split(",") if part.strip()]


def cors_origins(s: Settings) -> list[str]:
    return _split(s.http.cors_origins)
