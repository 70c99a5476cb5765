"""Storage in PostgreSQL at one URL: the part the embedded and production profiles share.

:class:`PostgresStorage` is given the URL, what runs the server (Craig itself in the embedded
profile, someone else in production) and the schema policy (the embedded profile migrates
itself; production only checks and refuses); it provides the unit of work, the stores, the
LISTEN listener and their resources and readiness check.
"""

from __future__ import annotations

from operator import attrgetter

from dependency_injector import containers, providers

from craig.adapters.postgres.audit import PostgresAuditLog
from craig.adapters.postgres.audit_chain import PostgresAuditChainStore
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.idempotency import PostgresIdempotencyStore
from craig.adapters.postgres.inbox import PostgresInboxStore
from craig.adapters.postgres.key_rotation import PostgresEncryptedColumnStore
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.rate_limit import PostgresRateLimiter
from craig.adapters.postgres.send_job_queue import PostgresSendJobQueue, listener_job_wake
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL
from craig.entrypoints.profiles.lifecycle import PostgresServer, listening, postgres_ping, postgres_running
from craig.entrypoints.settings import Settings
from craig.ports.cipher import FieldCipher

#: The NOTIFY channels one LISTEN connection per process follows (see the migrations).
LISTEN_CHANNELS = ("craig_outbox", "craig_idempotency", SEND_JOBS_CHANNEL)


class PostgresStorage(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    cipher: providers.Dependency[FieldCipher] = providers.Dependency()
    url = providers.Dependency(instance_of=str)
    server: providers.Dependency[PostgresServer] = providers.Dependency()
    #: A :data:`~craig.entrypoints.profiles.lifecycle.Schema`.
    schema = providers.Dependency(instance_of=str)

    database = providers.Singleton(
        PostgresDatabase,
        url=url,
        pool_size=settings.provided.database.pool_size,
        max_overflow=settings.provided.database.max_overflow,
        statement_timeout_ms=settings.provided.database.statement_timeout_ms,
    )
    listener = providers.Singleton(PostgresListener, url=url, channels=LISTEN_CHANNELS)

    #: Read once: a ``settings.provided...`` chain would be walked again for every unit of work.
    audit_recorded = providers.Singleton(attrgetter("audit.enabled"), settings)
    uow = providers.Factory(PostgresUnitOfWork, database=database, cipher=cipher, record_audit=audit_recorded)
    idempotency_store = providers.Singleton(
        PostgresIdempotencyStore, database=database, cipher=cipher, listener=listener
    )
    outbox_relay_store = providers.Singleton(PostgresOutboxRelayStore, database=database, listener=listener)
    inbox_store = providers.Singleton(PostgresInboxStore, database=database)
    rate_limiter = providers.Singleton(PostgresRateLimiter, database=database)
    encrypted_column_store = providers.Singleton(PostgresEncryptedColumnStore, database=database)
    audit_chain_store = providers.Singleton(PostgresAuditChainStore, database=database)
    audit_log = providers.Singleton(PostgresAuditLog, database=database, record=audit_recorded)
    # One per worker: each keeps a connection of its own.
    send_job_queue = providers.Factory(
        PostgresSendJobQueue,
        database=database,
        cipher=cipher,
        wake=providers.Factory(listener_job_wake, listener),
    )

    database_running = providers.Resource(postgres_running, server=server, database=database, url=url, schema=schema)
    listener_running = providers.Resource(listening, listener)
    database_check = providers.Callable(postgres_ping, database.provider)
