"""What can be set: the settings classes, their defaults and help texts.

Every field has a default and a help text (``craig config`` prints them). A field marked with
:func:`_secret` holds a credential: it is left out of ``repr``, masked by ``craig config
--effective``, and can be read from a file (``<VARIABLE>_FILE``, see ``environment``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs

from craig.domain.constants import (
    ATTACHMENT_MAX_BYTES,
    ATTACHMENT_SCAN_GRACE,
    ATTACHMENT_SCAN_INTERVAL,
    AUDIT_RETENTION,
    DATABASE_MAX_OVERFLOW,
    DATABASE_POOL_SIZE,
    DATABASE_STATEMENT_TIMEOUT_MS,
    EXCHANGE_RETENTION,
    HTTP_MAX_BODY_BYTES,
    IDEMPOTENCY_CLAIM_TTL,
    IDEMPOTENCY_LOSER_WAIT_CEILING,
    IDEMPOTENCY_MAX_STORED_BODY_BYTES,
    IDEMPOTENCY_RETENTION,
    INBOX_BACKOFF_BASE,
    INBOX_BACKOFF_CAP,
    INBOX_RETENTION,
    INTAKE_RATE_LIMIT_PER_MINUTE,
    JWKS_FETCH_TIMEOUT,
    JWKS_REFRESH_INTERVAL,
    JWT_LEEWAY,
    OUTBOX_BATCH_SIZE,
    OUTBOX_POLL_INTERVAL,
    OUTBOX_RELAYS_PER_PROCESS,
    OUTBOX_RETENTION,
    PARTNER_HTTP_CONNECT_TIMEOUT,
    PARTNER_HTTP_MAX_CONNECTIONS,
    PARTNER_HTTP_READ_TIMEOUT,
    REFERRAL_RESPONSE_TIME_HIGH,
    REFERRAL_RESPONSE_TIME_LOW,
    REFERRAL_RESPONSE_TIME_MEDIUM,
    REFERRAL_RESPONSE_TIME_URGENT,
    RULE_CACHE_MAX_AGE,
    SEND_LEASE,
    SEND_MAX_CONCURRENCY,
    WORKER_METRICS_PORT,
)


class SettingsError(Exception):
    """One line: which setting is wrong and how to fix it."""


class Profile(enum.StrEnum):
    MEMORY = "memory"
    EMBEDDED = "embedded"
    PRODUCTION = "production"


class LogFormat(enum.StrEnum):
    JSON = "json"
    CONSOLE = "console"


def _log_format(value: LogFormat | str | None) -> LogFormat | None:
    return None if value is None or value == "" else LogFormat(value)


class EncryptionMode(enum.StrEnum):
    REQUIRED = "required"
    OPTIONAL = "optional"


def _hours(value: timedelta) -> float:
    return value.total_seconds() / 3600


def _days(value: timedelta) -> float:
    return value.total_seconds() / 86400


def _help(text: str, default: Any = attrs.NOTHING, **kw: Any) -> Any:
    return attrs.field(default=default, metadata={"help": text}, **kw)


def _secret(text: str, default: str) -> Any:
    return attrs.field(default=default, metadata={"help": text, "secret": True}, repr=False)


@attrs.define
class HttpSettings:
    host: str = _help("Interface `craig serve` binds.", "127.0.0.1")
    port: int = _help("Port `craig serve` listens on.", 8000)
    metrics_port: int = _help(
        "Serve `/metrics` on this port (same host) instead of on the public API; 0: on the API port.", 0
    )
    max_body_bytes: int = _help(
        "Largest request body accepted (413 above it). Upload routes have their own limit.", HTTP_MAX_BODY_BYTES
    )
    cors_origins: str = _help("Comma-separated allowed CORS origins; empty disables CORS; `*` any.", "")
    cors_allow_credentials: bool = _help("Allow credentials in CORS requests (never with `*`).", False)
    trusted_proxies: str = _help("Comma-separated proxy IPs whose X-Forwarded-For is trusted for client IPs.", "")


@attrs.define
class AuthSettings:
    jwt_secret: str = _secret("HS256 shared secret (>= 32 bytes in production). Embedded generates one.", "")
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
    leeway_seconds: int = _help("Clock skew tolerated on exp/nbf.", int(JWT_LEEWAY.total_seconds()))


@attrs.define
class DatabaseSettings:
    url: str = _secret("PostgreSQL URL (production), e.g. postgresql://craig@db:5432/craig.", "")
    pool_size: int = _help(
        "With max_overflow: the most connections one process opens (each closed after 5 minutes unused).",
        DATABASE_POOL_SIZE,
    )
    max_overflow: int = _help("Added to pool_size for the most connections one process opens.", DATABASE_MAX_OVERFLOW)
    statement_timeout_ms: int = _help("Server-side statement timeout.", DATABASE_STATEMENT_TIMEOUT_MS)
    embedded_port: int = _help("TCP port of the embedded server; 0 = unix socket only.", 0)


@attrs.define
class BrokerSettings:
    url: str = _secret("AMQP URL (production), e.g. amqp://craig:secret@rabbit:5672/craig.", "")
    events_exchange: str = _help("Topic exchange events are published to.", "craig.events")
    dlx_exchange: str = _help("Dead-letter exchange for poison messages.", "craig.dlx")
    queue_prefix: str = _help("Prefix of every queue Craig declares.", "craig")


@attrs.define
class ObjectStoreSettings:
    endpoint: str = _help("S3 endpoint host:port (production).", "")
    access_key: str = _secret("S3 access key.", "")
    secret_key: str = _secret("S3 secret key.", "")
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
    relays: int = _help("Batches one process relays at once, each its own aggregates.", OUTBOX_RELAYS_PER_PROCESS)
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
    connect_timeout_seconds: float = _help(
        "Partner HTTP connect timeout.", PARTNER_HTTP_CONNECT_TIMEOUT.total_seconds()
    )
    read_timeout_seconds: float = _help("Partner HTTP read timeout.", PARTNER_HTTP_READ_TIMEOUT.total_seconds())
    max_connections: int = _help("Partner HTTP connection pool size.", PARTNER_HTTP_MAX_CONNECTIONS)
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
    captcha_secret: str = _secret("Captcha siteverify secret, or `disabled`.", "disabled")
    captcha_verify_url: str = _help("hCaptcha/Turnstile-compatible siteverify URL.", "https://hcaptcha.com/siteverify")
    rate_limit_per_minute: int = _help("Referrals accepted per client IP per minute.", INTAKE_RATE_LIMIT_PER_MINUTE)


@attrs.define
class RulesSettings:
    cache_max_age_seconds: float = _help(
        "Longest a decision-cache entry is served before the database is read again.",
        RULE_CACHE_MAX_AGE.total_seconds(),
    )


@attrs.define
class AuditSettings:
    retention_days: int = _help(
        "Audit entries are kept at least this long, then purged by the cleanup worker. The database "
        "enforces its own floor (7 years unless its owner changed it): raising this raises the floor, "
        "lowering it below the floor purges nothing sooner.",
        AUDIT_RETENTION.days,
    )
    enabled: bool = _help(
        "Record audit entries. For benchmarks and tests only: false records nothing, and the "
        "production profile refuses to start with it.",
        True,
    )


@attrs.define
class ScreeningSettings:
    urgent_response_hours: float = _help(
        "How soon an urgent referral must be screened.", REFERRAL_RESPONSE_TIME_URGENT.total_seconds() / 3600
    )
    high_response_hours: float = _help(
        "How soon a high-priority referral must be screened.", REFERRAL_RESPONSE_TIME_HIGH.total_seconds() / 3600
    )
    medium_response_hours: float = _help(
        "How soon a medium-priority referral must be screened.", REFERRAL_RESPONSE_TIME_MEDIUM.total_seconds() / 3600
    )
    low_response_hours: float = _help(
        "How soon a low-priority or unscored referral must be screened.",
        REFERRAL_RESPONSE_TIME_LOW.total_seconds() / 3600,
    )


@attrs.define
class WorkerSettings:
    in_process: bool | None = _help(
        "Run background workers inside `craig serve` (default: yes for memory/embedded).", None
    )
    metrics_port: int = _help(
        "Port `craig worker` serves /health/live, /health/ready and /metrics on (host: CRAIG_HTTP__HOST); 0: none.",
        WORKER_METRICS_PORT,
    )


@attrs.define
class Settings:
    profile: Profile = _help("memory, embedded or production.", Profile.EMBEDDED, converter=Profile)
    data_dir: Path = _help("Where the embedded profile keeps everything.", Path(".craig"), converter=Path)
    log_level: str = _help("Log level.", "INFO")
    log_json: bool = _help("JSON logs (true) or console logs (false); CRAIG_LOG_FORMAT wins when set.", True)
    log_format: LogFormat | None = _help(
        "json (one JSON object a line) or console (readable lines); default: json unless CRAIG_LOG_JSON=false.",
        None,
        converter=_log_format,
    )
    instance_id: str = _help("This process's id in events; default: random.", "")
    encryption_mode: EncryptionMode = _help(
        "required: refuse to start without a key; optional: plaintext when no key.",
        EncryptionMode.REQUIRED,
        converter=EncryptionMode,
    )
    field_encryption_key: str = _secret(
        "Base64 of 32 bytes (AES-256-GCM); `id:key,id:key` for rotation, newest first.", ""
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
    screening: ScreeningSettings = attrs.field(factory=ScreeningSettings)
    workers: WorkerSettings = attrs.field(factory=WorkerSettings)
    audit: AuditSettings = attrs.field(factory=AuditSettings)

    @property
    def logs_as_json(self) -> bool:
        if self.log_format is not None:
            return self.log_format is LogFormat.JSON
        return self.log_json

    @property
    def run_workers_in_process(self) -> bool:
        if self.workers.in_process is not None:
            return self.workers.in_process
        return self.profile is not Profile.PRODUCTION


# --- walking the schema -----------------------------------------------------------------------


@attrs.frozen
class Leaf:
    """One setting: its path from :class:`Settings` (``("auth", "jwt_secret")``) and its field."""

    path: tuple[str, ...]
    field: attrs.Attribute[Any]

    @property
    def secret(self) -> bool:
        return bool(self.field.metadata.get("secret"))

    @property
    def help(self) -> str:
        return str(self.field.metadata.get("help", ""))

    def value(self, settings: Settings) -> Any:
        value: Any = settings
        for name in self.path:
            value = getattr(value, name)
        return value


def section_of(field: attrs.Attribute[Any]) -> type | None:
    """The section (an attrs class of settings) the field holds, or None for a value."""
    kind = field.type
    return kind if isinstance(kind, type) and attrs.has(kind) else None


def resolved_fields(cls: type) -> tuple[attrs.Attribute[Any], ...]:
    fields: tuple[attrs.Attribute[Any], ...] = attrs.fields(attrs.resolve_types(cls, globals(), localns=None))
    return fields


def leaves(cls: type = Settings, path: tuple[str, ...] = ()) -> Iterator[Leaf]:
    """Every setting, sections walked depth first in declaration order."""
    for field in resolved_fields(cls):
        if (section := section_of(field)) is not None:
            yield from leaves(section, (*path, field.name))
        else:
            yield Leaf((*path, field.name), field)


def split_csv(csv: str) -> list[str]:
    return [part.strip() for part in csv.split(",") if part.strip()]


def cors_origins(s: Settings) -> list[str]:
    return split_csv(s.http.cors_origins)
