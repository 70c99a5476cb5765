"""What the background loops run, built from the adapter set and the policies: the outbox relay,
every event subscription (the one list to extend), and what the cleanup loop purges after how
long (the one list to extend). The loops themselves are in :mod:`craig.entrypoints.workers`.
"""

from __future__ import annotations

import functools

from dependency_injector import containers, providers

from craig.domain.constants import INBOX_BROADCAST_RETENTION, INTAKE_RATE_LIMIT_RETENTION, PURGE_BATCH_SIZE
from craig.domain.event_catalogue import RULES_CACHE_INVALIDATED
from craig.ports.idempotency import IdempotencyStore
from craig.ports.inbox import InboxStore
from craig.ports.messaging import EventBus, Subscription
from craig.ports.outbox import OutboxRelayStore
from craig.ports.rate_limit import RateLimiter
from craig.usecases.events import OutboxRelay
from craig.usecases.operations import Purge, PurgeExpired, Retention
from craig.usecases.rules import EvictOnInvalidation


def _broadcast_consumers(subscriptions: list[Subscription]) -> list[str]:
    return [s.consumer for s in subscriptions if s.broadcast]


class Background(containers.DeclarativeContainer):
    idempotency_store: providers.Dependency[IdempotencyStore] = providers.Dependency()
    outbox_relay_store: providers.Dependency[OutboxRelayStore] = providers.Dependency()
    inbox_store: providers.Dependency[InboxStore] = providers.Dependency()
    rate_limiter: providers.Dependency[RateLimiter] = providers.Dependency()
    event_bus: providers.Dependency[EventBus] = providers.Dependency()
    purge_delivered_transactions: providers.Dependency[Purge] = providers.Dependency()
    evict_rule_cache: providers.Dependency[EvictOnInvalidation] = providers.Dependency()
    purge_audit: providers.Dependency[Purge] = providers.Dependency()
    #: :class:`~craig.entrypoints.policies.Policies`
    policies = providers.DependenciesContainer()

    outbox_relay = providers.Factory(OutboxRelay, outbox_relay_store, event_bus, batch_size=policies.outbox_batch_size)

    # --- every event consumer this deployment runs (the one list to extend) ------------------------
    subscriptions = providers.List(
        # rules.cache_invalidated, broadcast to every instance; the cache is dropped whenever the
        # subscription (re)connects, as invalidations sent meanwhile are lost to this instance
        providers.Factory(
            Subscription,
            consumer="rules-cache",
            event_types=(RULES_CACHE_INVALIDATED.name,),
            handler=evict_rule_cache,
            broadcast=True,
            on_connected=evict_rule_cache.provided.subscribed,
        ),
    )

    # --- what the cleanup loop purges, and after how long (the one list to extend) -----------------
    purge_expired = providers.Factory(
        PurgeExpired,
        retentions=providers.List(
            providers.Factory(
                Retention, "idempotency", idempotency_store.provided.purge, policies.idempotency_retention
            ),
            providers.Factory(
                Retention, "outbox", outbox_relay_store.provided.purge_published, policies.outbox_retention
            ),
            providers.Factory(Retention, "inbox", inbox_store.provided.purge_processed, policies.inbox_retention),
            # Inbox rows left under the per-instance keys of the broadcast subscriptions.
            providers.Factory(
                Retention,
                "broadcast inbox",
                providers.Callable(
                    functools.partial,
                    inbox_store.provided.purge_broadcast,
                    providers.Callable(_broadcast_consumers, subscriptions),
                ),
                INBOX_BROADCAST_RETENTION,
            ),
            providers.Factory(
                Retention, "intake rate limits", rate_limiter.provided.purge_idle, INTAKE_RATE_LIMIT_RETENTION
            ),
            providers.Factory(Retention, "exchange", purge_delivered_transactions, policies.exchange_retention),
            # Never below the floor the audit tables enforce themselves.
            providers.Factory(Retention, "audit", purge_audit, policies.audit_retention),
        ),
        batch_size=PURGE_BATCH_SIZE,
    )
