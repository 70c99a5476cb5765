"""What the settings decide about behaviour: the policies, periods and limits the composition
root gives the use cases, the HTTP layer and the background loops.

They are built here, once, from :class:`~craig.entrypoints.settings.Settings`; nothing else
turns a setting into a policy.
"""

from __future__ import annotations

from datetime import timedelta

from dependency_injector import containers, providers

from craig.domain.attachments import UploadValidation
from craig.domain.constants import IDEMPOTENCY_LOSER_POLL_INTERVAL
from craig.domain.inbox import RetryPolicy
from craig.domain.screening import ResponseTimes
from craig.entrypoints.security_wiring import intake_policy_from
from craig.entrypoints.settings import Settings
from craig.usecases.exchange import SendPolicy
from craig.usecases.idempotency import IdempotencyPolicy


def seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def hours(value: float) -> timedelta:
    return timedelta(hours=value)


def response_times_from(settings: Settings) -> ResponseTimes:
    screening = settings.screening
    return ResponseTimes(
        urgent=timedelta(hours=screening.urgent_response_hours),
        high=timedelta(hours=screening.high_response_hours),
        medium=timedelta(hours=screening.medium_response_hours),
        low=timedelta(hours=screening.low_response_hours),
    )


def days(value: float) -> timedelta:
    return timedelta(days=value)


class Policies(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)

    # --- HTTP: idempotent writes, uploads, public intake ------------------------------------------
    idempotency = providers.Singleton(
        IdempotencyPolicy,
        claim_ttl=providers.Callable(seconds, settings.provided.idempotency.claim_ttl_seconds),
        wait_ceiling=providers.Callable(seconds, settings.provided.idempotency.wait_ceiling_seconds),
        poll_interval=providers.Object(IDEMPOTENCY_LOSER_POLL_INTERVAL),
        max_body_bytes=settings.provided.idempotency.max_body_bytes,
    )
    upload_validation = providers.Singleton(UploadValidation, max_bytes=settings.provided.attachments.max_bytes)
    intake = providers.Singleton(intake_policy_from, settings)
    #: How soon a referral must be screened, by priority.
    referral_response_times = providers.Singleton(response_times_from, settings)
    rule_cache_max_age = providers.Callable(seconds, settings.provided.rules.cache_max_age_seconds)

    # --- events: the relay and the inbox's redeliveries --------------------------------------------
    outbox_batch_size = settings.provided.outbox.batch_size
    outbox_relays = settings.provided.outbox.relays
    outbox_poll_interval = providers.Callable(seconds, settings.provided.outbox.poll_interval_seconds)
    inbox_retry = providers.Singleton(
        RetryPolicy,
        base=providers.Callable(seconds, settings.provided.inbox.backoff_base_seconds),
        cap=providers.Callable(seconds, settings.provided.inbox.backoff_cap_seconds),
    )

    # --- attachments scanner, partner send jobs ----------------------------------------------------
    attachment_scan_grace = providers.Callable(seconds, settings.provided.attachments.scan_grace_seconds)
    attachment_scan_interval = providers.Callable(seconds, settings.provided.attachments.scan_interval_seconds)
    send = providers.Singleton(
        SendPolicy,
        lease=providers.Callable(seconds, settings.provided.exchange.lease_seconds),
        max_concurrency=settings.provided.exchange.max_concurrency,
        prefetch=settings.provided.exchange.prefetch,
    )

    # --- retention: how long the cleanup loop keeps what is done ----------------------------------
    idempotency_retention = providers.Callable(hours, settings.provided.idempotency.retention_hours)
    outbox_retention = providers.Callable(days, settings.provided.outbox.retention_days)
    inbox_retention = providers.Callable(days, settings.provided.inbox.retention_days)
    exchange_retention = providers.Callable(days, settings.provided.exchange.retention_days)
    audit_retention = providers.Callable(days, settings.provided.audit.retention_days)
