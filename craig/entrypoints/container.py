"""The one composition root (dependency-injector).

The HTTP app, the workers and the CLI are all built from :class:`Container`. Each port has one
provider, and a ``Selector`` on the profile picks a whole adapter set:

========== ================================ ================= ======================
profile    database                         broker            object store
========== ================================ ================= ======================
memory     MemoryDatabase                   in-process bus    memory
embedded   PostgreSQL 18 run by Craig       in-process bus    local filesystem
production PostgreSQL (CRAIG_DATABASE__URL) RabbitMQ          S3 / MinIO
========== ================================ ================= ======================

Use cases receive their ports through their constructors; a request-scoped unit of work is
passed at call time (``container.create_case(uow=request_uow)``). Tests override providers.
"""

from __future__ import annotations

import uuid

from dependency_injector import containers, providers

from craig.adapters.clock import SystemClock
from craig.adapters.crypto.plaintext import PlaintextCipher
from craig.adapters.inprocess.bus import InboxDeadLetters, InProcessBus
from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.idempotency import MemoryIdempotencyStore
from craig.adapters.memory.inbox import MemoryInboxStore
from craig.adapters.memory.outbox import MemoryOutboxRelayStore
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.idempotency import PostgresIdempotencyStore
from craig.adapters.postgres.inbox import PostgresInboxStore
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.rabbit.bus import RabbitEventBus
from craig.adapters.rabbit.dead_letters import RabbitDeadLetters
from craig.entrypoints.settings import Settings
from craig.usecases.dead_letters import DeadLetterOperations

EMBEDDED_DATABASE = "craig"
LISTEN_CHANNELS = ("craig_outbox", "craig_idempotency")


def _profile(settings: Settings) -> str:
    return settings.profile.value


def _embedded_url(server: EmbeddedPostgres) -> str:
    return server.url(EMBEDDED_DATABASE)


def _instance_id(settings: Settings) -> str:
    return settings.instance_id or f"craig-{uuid.uuid4().hex[:12]}"


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    profile = providers.Callable(_profile, settings)
    instance_id = providers.Singleton(_instance_id, settings)
    clock = providers.Singleton(SystemClock)
    field_cipher = providers.Singleton(PlaintextCipher)

    # --- database ---------------------------------------------------------------------------
    memory_database = providers.Singleton(MemoryDatabase, clock=clock)
    embedded_postgres = providers.Singleton(
        EmbeddedPostgres,
        data_dir=providers.Callable(lambda s: s.data_dir / "pg", settings),
        port=settings.provided.database.embedded_port,
    )
    database_url = providers.Selector(
        profile,
        memory=providers.Object(""),
        embedded=providers.Callable(_embedded_url, embedded_postgres),
        production=settings.provided.database.url,
    )
    postgres = providers.Singleton(
        PostgresDatabase,
        url=database_url,
        pool_size=settings.provided.database.pool_size,
        max_overflow=settings.provided.database.max_overflow,
        statement_timeout_ms=settings.provided.database.statement_timeout_ms,
    )
    listener = providers.Singleton(PostgresListener, url=database_url, channels=LISTEN_CHANNELS)

    uow = providers.Selector(
        profile,
        memory=providers.Factory(MemoryUnitOfWork, db=memory_database, cipher=field_cipher),
        embedded=providers.Factory(PostgresUnitOfWork, database=postgres, cipher=field_cipher),
        production=providers.Factory(PostgresUnitOfWork, database=postgres, cipher=field_cipher),
    )
    idempotency_store = providers.Selector(
        profile,
        memory=providers.Singleton(MemoryIdempotencyStore, db=memory_database),
        embedded=providers.Singleton(PostgresIdempotencyStore, database=postgres, listener=listener),
        production=providers.Singleton(PostgresIdempotencyStore, database=postgres, listener=listener),
    )
    outbox_relay_store = providers.Selector(
        profile,
        memory=providers.Singleton(MemoryOutboxRelayStore, db=memory_database),
        embedded=providers.Singleton(PostgresOutboxRelayStore, database=postgres, listener=listener),
        production=providers.Singleton(PostgresOutboxRelayStore, database=postgres, listener=listener),
    )

    # --- events: inbox, bus, dead letters (issue 4) -------------------------------------------
    inbox_store = providers.Selector(
        profile,
        memory=providers.Singleton(MemoryInboxStore, db=memory_database),
        embedded=providers.Singleton(PostgresInboxStore, database=postgres),
        production=providers.Singleton(PostgresInboxStore, database=postgres),
    )
    event_bus = providers.Selector(
        profile,
        memory=providers.Singleton(InProcessBus, inbox=inbox_store),
        embedded=providers.Singleton(InProcessBus, inbox=inbox_store),
        production=providers.Singleton(
            RabbitEventBus,
            url=settings.provided.broker.url,
            events_exchange=settings.provided.broker.events_exchange,
            dlx_exchange=settings.provided.broker.dlx_exchange,
            queue_prefix=settings.provided.broker.queue_prefix,
            instance_id=instance_id,
        ),
    )
    dead_letters = providers.Selector(
        profile,
        memory=providers.Singleton(InboxDeadLetters, inbox=inbox_store),
        embedded=providers.Singleton(InboxDeadLetters, inbox=inbox_store),
        production=providers.Singleton(RabbitDeadLetters, bus=event_bus),
    )
    dead_letter_operations = providers.Factory(
        DeadLetterOperations, dead_letters=dead_letters, uow_factory=uow.provider
    )

    # --- cases, contacts, attachments (issue 5) --------------------------------------------
    # --- foster homes and placements (issue 6) ------------------------------------------------
    # --- partner exchange (issue 7) -----------------------------------------------------------
    # --- intake, rule sets, field encryption (issue 8) --------------------------------------


def build_container(settings: Settings) -> Container:
    container = Container(settings=settings)
    return container
