"""The production profile's adapter set: PostgreSQL, RabbitMQ and S3 run by someone else.

PostgreSQL at ``CRAIG_DATABASE__URL``, never migrated implicitly (startup checks the schema
and refuses, naming ``craig db upgrade``); RabbitMQ at ``CRAIG_BROKER__URL``; S3 or MinIO at
``CRAIG_OBJECT_STORE__ENDPOINT``. Many API and worker processes on many machines.
"""

from __future__ import annotations

from collections.abc import Callable

from dependency_injector import containers, providers

from craig.adapters.objectstore.minio import MinioObjectStore
from craig.entrypoints.profiles.brokers import RabbitMQBroker
from craig.entrypoints.profiles.lifecycle import ExternalPostgres, object_store_ping, object_store_prepared
from craig.entrypoints.profiles.postgres import PostgresStorage
from craig.entrypoints.settings import Settings
from craig.ports.cipher import FieldCipher
from craig.ports.clock import Clock
from craig.ports.errors import PortError
from craig.ports.object_store import ObjectStore


def _s3_unreachable(settings: Settings) -> Callable[[ObjectStore, PortError], str]:
    def explain(_store: ObjectStore, error: PortError) -> str:
        return (
            f"cannot reach the S3 endpoint {settings.object_store.endpoint!r} "
            f"(bucket {settings.object_store.bucket!r}): {error}; check CRAIG_OBJECT_STORE__ENDPOINT, "
            "__ACCESS_KEY, __SECRET_KEY and __SECURE, and that the server runs"
        )

    return explain


class ProductionAdapters(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    clock: providers.Dependency[Clock] = providers.Dependency()
    cipher: providers.Dependency[FieldCipher] = providers.Dependency()
    instance_id = providers.Dependency(instance_of=str)

    # --- storage: PostgreSQL at CRAIG_DATABASE__URL, schema checked --------------------------------
    postgres_server = providers.Singleton(ExternalPostgres)
    database_url = settings.provided.database.url
    schema = providers.Object("check")
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

    # --- broker: RabbitMQ at CRAIG_BROKER__URL ----------------------------------------------------
    broker = providers.Container(RabbitMQBroker, settings=settings, instance_id=instance_id)
    event_bus = broker.event_bus
    dead_letters = broker.dead_letters
    unrouted_events = broker.unrouted_events
    broker_running = broker.broker_running

    # --- object store: S3 / MinIO -----------------------------------------------------------------
    object_store = providers.Singleton(
        MinioObjectStore,
        endpoint=settings.provided.object_store.endpoint,
        access_key=settings.provided.object_store.access_key,
        secret_key=settings.provided.object_store.secret_key,
        bucket=settings.provided.object_store.bucket,
        secure=settings.provided.object_store.secure,
        region=settings.provided.object_store.region,
    )
    object_store_running = providers.Resource(
        object_store_prepared, object_store, explain=providers.Callable(_s3_unreachable, settings)
    )

    health_checks = providers.Dict(
        database=storage.database_check,
        broker=broker.broker_check,
        object_store=providers.Callable(object_store_ping, object_store.provider),
    )
