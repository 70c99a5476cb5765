"""The memory profile's adapter set: everything in this process, nothing on disk.

Unit and property tests, and a throw-away demo. The in-process bus's queues live in the memory
database's inbox; there is nothing to start, so its resources do nothing.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from craig.adapters.audit_log import UnitOfWorkAuditLog
from craig.adapters.memory.audit_chain import MemoryAuditChainStore
from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.exchange import memory_job_wake
from craig.adapters.memory.idempotency import MemoryIdempotencyStore
from craig.adapters.memory.inbox import MemoryInboxStore
from craig.adapters.memory.key_rotation import MemoryEncryptedColumnStore
from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.memory.outbox import MemoryOutboxRelayStore
from craig.adapters.memory.rate_limit import MemoryRateLimiter
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.send_job_queue import UnitOfWorkSendJobQueue
from craig.entrypoints.profiles.brokers import InProcessBroker
from craig.entrypoints.profiles.lifecycle import memory_ping, nothing_to_start, object_store_ping, object_store_prepared
from craig.entrypoints.settings import Settings
from craig.ports.cipher import FieldCipher
from craig.ports.clock import Clock


class MemoryAdapters(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    clock: providers.Dependency[Clock] = providers.Dependency()
    cipher: providers.Dependency[FieldCipher] = providers.Dependency()
    instance_id = providers.Dependency(instance_of=str)

    # --- storage ------------------------------------------------------------------------------
    memory_database = providers.Singleton(MemoryDatabase, clock=clock)
    #: No database to migrate or rotate keys in.
    database_url: providers.Object[str | None] = providers.Object(None)
    uow = providers.Factory(
        MemoryUnitOfWork, db=memory_database, cipher=cipher, record_audit=settings.provided.audit.enabled
    )
    idempotency_store = providers.Singleton(MemoryIdempotencyStore, db=memory_database, cipher=cipher)
    outbox_relay_store = providers.Singleton(MemoryOutboxRelayStore, db=memory_database)
    inbox_store = providers.Singleton(MemoryInboxStore, db=memory_database)
    rate_limiter = providers.Singleton(MemoryRateLimiter, db=memory_database)
    encrypted_column_store = providers.Singleton(MemoryEncryptedColumnStore, db=memory_database)
    audit_chain_store = providers.Singleton(MemoryAuditChainStore, db=memory_database)
    audit_log = providers.Singleton(UnitOfWorkAuditLog, uow_factory=uow.provider)
    send_job_queue = providers.Factory(
        UnitOfWorkSendJobQueue, uow_factory=uow.provider, wake=providers.Factory(memory_job_wake, memory_database)
    )
    database_running = providers.Resource(nothing_to_start)
    listener_running = providers.Resource(nothing_to_start)

    # --- broker -------------------------------------------------------------------------------
    broker = providers.Container(
        InProcessBroker, inbox_store=inbox_store, instance_id=instance_id, database_running=database_running
    )
    event_bus = broker.event_bus
    dead_letters = broker.dead_letters
    unrouted_events = broker.unrouted_events
    broker_running = broker.broker_running

    # --- object store -------------------------------------------------------------------------
    object_store = providers.Singleton(MemoryObjectStore, clock=clock)
    object_store_running = providers.Resource(object_store_prepared, object_store)

    health_checks = providers.Dict(
        database=providers.Callable(memory_ping, memory_database.provider),
        object_store=providers.Callable(object_store_ping, object_store.provider),
    )
