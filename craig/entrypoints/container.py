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

Use cases receive their ports through their constructors. Those that run in a request's
transaction are factories called with it (``container.open_case(uow=request_uow)``); the HTTP
adapter does that in :mod:`craig.entrypoints.http.use_cases`, so no route sees the container.
Tests override providers.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from dependency_injector import containers, providers

from craig.adapters.clock import SystemClock
from craig.adapters.inprocess.bus import InboxDeadLetters, InboxUnroutedEvents, InProcessBus
from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.exchange import memory_job_wake
from craig.adapters.memory.idempotency import MemoryIdempotencyStore
from craig.adapters.memory.inbox import MemoryInboxStore
from craig.adapters.memory.key_rotation import MemoryEncryptedColumnStore
from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.memory.outbox import MemoryOutboxRelayStore
from craig.adapters.memory.rate_limit import MemoryRateLimiter
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.objectstore.filesystem import FilesystemObjectStore
from craig.adapters.objectstore.minio import MinioObjectStore
from craig.adapters.partners.http import HttpPartnerGateway
from craig.adapters.postgres.database import PostgresDatabase
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.idempotency import PostgresIdempotencyStore
from craig.adapters.postgres.inbox import PostgresInboxStore
from craig.adapters.postgres.key_rotation import PostgresEncryptedColumnStore
from craig.adapters.postgres.notify import PostgresListener
from craig.adapters.postgres.outbox import PostgresOutboxRelayStore
from craig.adapters.postgres.rate_limit import PostgresRateLimiter
from craig.adapters.postgres.send_job_queue import PostgresSendJobQueue
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.rabbit.bus import RabbitEventBus
from craig.adapters.rabbit.dead_letters import RabbitDeadLetters
from craig.adapters.rabbit.unrouted import RabbitUnroutedEvents
from craig.adapters.send_job_queue import SEND_JOBS_CHANNEL, UnitOfWorkSendJobQueue
from craig.domain.attachments import UploadValidation
from craig.domain.constants import KEY_ROTATION_BATCH_SIZE
from craig.entrypoints import metrics
from craig.entrypoints.casework_wiring import response_times_from
from craig.entrypoints.security_wiring import (
    captcha_from,
    encrypted_columns,
    field_cipher_from,
    field_encryptor_from,
    intake_policy_from,
)
from craig.entrypoints.settings import Settings
from craig.usecases.attachments import GetAttachment, ListAttachments, OpenAttachment, UploadAttachment
from craig.usecases.case_lifecycle.close_case import CloseCase
from craig.usecases.case_lifecycle.list_case_placements import ListCasePlacements
from craig.usecases.case_lifecycle.reindex_family_names import ReindexFamilyNames
from craig.usecases.case_lifecycle.reopen_case import ReopenCase
from craig.usecases.case_lifecycle.search_cases import SearchCases
from craig.usecases.case_lifecycle.unassign_worker import UnassignWorker
from craig.usecases.case_lifecycle.update_case import UpdateCase
from craig.usecases.cases import AssignWorker, GetCase, ListCases, OpenCase
from craig.usecases.contacts import GetContact, ListContacts, RecordContact
from craig.usecases.dead_letters import DeadLetterOperations
from craig.usecases.dispatch_send_job import DispatchSendJob
from craig.usecases.exchange import (
    GetTransaction,
    ListPartners,
    PurgeDeliveredTransactions,
    RegisterPartner,
    RetrySendJob,
    SendJobBacklog,
    StartTransaction,
)
from craig.usecases.foster_homes.list_foster_home_page import ListFosterHomePage
from craig.usecases.foster_homes.list_home_placements import ListHomePlacements
from craig.usecases.foster_homes.update_foster_home import UpdateFosterHome
from craig.usecases.give_back_send_jobs import GiveBackSendJobs
from craig.usecases.intake import AdmitIntakeClient, SubmitReferral
from craig.usecases.listings.list_attachment_page import ListAttachmentPage
from craig.usecases.listings.list_contact_page import ListContactPage
from craig.usecases.listings.list_partner_page import ListPartnerPage
from craig.usecases.listings.list_rule_set_page import ListRuleSetPage
from craig.usecases.partner_pages import ReadPartnerRecords, ShowPartner
from craig.usecases.placements import (
    CreateFosterHome,
    CreatePlacement,
    GetFosterHome,
    GetPlacement,
    ListFosterHomes,
    UpdatePlacement,
)
from craig.usecases.recover_send_jobs import RecoverExpiredSendJobs
from craig.usecases.referrals.get_referral import GetReferral
from craig.usecases.referrals.list_referrals import ListReferrals
from craig.usecases.referrals.referral_backlog import ReferralBacklog
from craig.usecases.referrals.screen_referral import ScreenReferral
from craig.usecases.reserve_send_slot import ReserveSendSlot
from craig.usecases.rotate_keys import RotateKeys
from craig.usecases.rule_cache import RuleSetCache
from craig.usecases.rules import CreateRuleSet, EvaluateRuleSet, EvictOnInvalidation, GetRuleSet, ListRuleSets
from craig.usecases.scan_attachments import REGISTERED_TABLES, AttachmentScanner
from craig.usecases.send_policy import SendPolicy

EMBEDDED_DATABASE = "craig"
LISTEN_CHANNELS = ("craig_outbox", "craig_idempotency", SEND_JOBS_CHANNEL)


def _profile(settings: Settings) -> str:
    return settings.profile.value


def _embedded_url(server: EmbeddedPostgres) -> str:
    return server.url(EMBEDDED_DATABASE)


def _by_storage(profile: Any, *, memory: Any, postgres: Any) -> providers.Selector[Any]:
    """The memory adapter, or the PostgreSQL one for both profiles that use PostgreSQL."""
    return providers.Selector(profile, memory=memory, embedded=postgres, production=postgres)


def _by_broker(profile: Any, *, inprocess: Any, rabbit: Any) -> providers.Selector[Any]:
    """The in-process bus's adapter (memory, embedded), or RabbitMQ's (production)."""
    return providers.Selector(profile, memory=inprocess, embedded=inprocess, production=rabbit)


def _instance_id(settings: Settings) -> str:
    return settings.instance_id or f"craig-{uuid.uuid4().hex[:12]}"


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    profile = providers.Callable(_profile, settings)
    instance_id = providers.Singleton(_instance_id, settings)
    clock = providers.Singleton(SystemClock)
    # encryption_mode + CRAIG_FIELD_ENCRYPTION_KEY: AES-256-GCM key ring, or plaintext
    # only when the mode is optional and no key is set.
    field_encryptor = providers.Singleton(field_encryptor_from, settings)
    field_cipher = providers.Singleton(field_cipher_from, field_encryptor, settings)

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

    uow = _by_storage(
        profile,
        memory=providers.Factory(MemoryUnitOfWork, db=memory_database, cipher=field_cipher),
        postgres=providers.Factory(PostgresUnitOfWork, database=postgres, cipher=field_cipher),
    )
    idempotency_store = _by_storage(
        profile,
        memory=providers.Singleton(MemoryIdempotencyStore, db=memory_database, cipher=field_cipher),
        postgres=providers.Singleton(
            PostgresIdempotencyStore, database=postgres, cipher=field_cipher, listener=listener
        ),
    )
    outbox_relay_store = _by_storage(
        profile,
        memory=providers.Singleton(MemoryOutboxRelayStore, db=memory_database),
        postgres=providers.Singleton(PostgresOutboxRelayStore, database=postgres, listener=listener),
    )

    # --- events: inbox, bus, dead letters (issue 4) -------------------------------------------
    inbox_store = _by_storage(
        profile,
        memory=providers.Singleton(MemoryInboxStore, db=memory_database),
        postgres=providers.Singleton(PostgresInboxStore, database=postgres),
    )
    event_bus = _by_broker(
        profile,
        inprocess=providers.Singleton(InProcessBus, inbox=inbox_store, instance_id=instance_id),
        rabbit=providers.Singleton(
            RabbitEventBus,
            url=settings.provided.broker.url,
            events_exchange=settings.provided.broker.events_exchange,
            dlx_exchange=settings.provided.broker.dlx_exchange,
            queue_prefix=settings.provided.broker.queue_prefix,
            instance_id=instance_id,
        ),
    )
    dead_letters = _by_broker(
        profile,
        inprocess=providers.Singleton(InboxDeadLetters, inbox=inbox_store),
        rabbit=providers.Singleton(RabbitDeadLetters, bus=event_bus),
    )
    dead_letter_operations = providers.Factory(
        DeadLetterOperations, dead_letters=dead_letters, uow_factory=uow.provider
    )
    unrouted_events = _by_broker(
        profile,
        inprocess=providers.Singleton(InboxUnroutedEvents, inbox=inbox_store),
        rabbit=providers.Singleton(RabbitUnroutedEvents, bus=event_bus),
    )

    # --- cases, contacts, attachments (issue 5) --------------------------------------------
    object_store = providers.Selector(
        profile,
        memory=providers.Singleton(MemoryObjectStore, clock=clock),
        embedded=providers.Singleton(
            FilesystemObjectStore, root=providers.Callable(lambda s: s.data_dir / "objects", settings)
        ),
        production=providers.Singleton(
            MinioObjectStore,
            endpoint=settings.provided.object_store.endpoint,
            access_key=settings.provided.object_store.access_key,
            secret_key=settings.provided.object_store.secret_key,
            bucket=settings.provided.object_store.bucket,
            secure=settings.provided.object_store.secure,
            region=settings.provided.object_store.region,
        ),
    )
    upload_validation = providers.Singleton(UploadValidation, max_bytes=settings.provided.attachments.max_bytes)
    # Each is called with the request's unit of work: ``container.open_case(uow=uow)``.
    open_case = providers.Factory(OpenCase, clock=clock)
    get_case = providers.Factory(GetCase)
    list_cases = providers.Factory(ListCases)
    assign_worker = providers.Factory(AssignWorker, clock=clock)
    record_contact = providers.Factory(RecordContact, clock=clock)
    get_contact = providers.Factory(GetContact)
    list_contacts = providers.Factory(ListContacts)
    upload_attachment = providers.Factory(
        UploadAttachment, uow_factory=uow.provider, object_store=object_store, clock=clock, validation=upload_validation
    )
    get_attachment = providers.Factory(GetAttachment)
    list_attachments = providers.Factory(ListAttachments)
    open_attachment = providers.Factory(OpenAttachment, object_store=object_store)
    # A singleton: it remembers where its orphan sweep stopped.
    attachment_scanner = providers.Singleton(
        AttachmentScanner,
        object_store=object_store,
        uow_factory=uow.provider,
        clock=clock,
        grace=providers.Callable(lambda s: timedelta(seconds=s.attachments.scan_grace_seconds), settings),
        tables=providers.Object(REGISTERED_TABLES),
    )
    # --- foster homes and placements (issue 6) ------------------------------------------------
    # Each is called with the request's unit of work: ``container.update_placement(uow=uow)``.
    create_foster_home = providers.Factory(CreateFosterHome, clock=clock)
    get_foster_home = providers.Factory(GetFosterHome)
    list_foster_homes = providers.Factory(ListFosterHomes)
    create_placement = providers.Factory(CreatePlacement, clock=clock)
    get_placement = providers.Factory(GetPlacement)
    update_placement = providers.Factory(UpdatePlacement, clock=clock)
    # --- partner exchange (issue 7) -----------------------------------------------------------
    partner_gateway = providers.Singleton(
        HttpPartnerGateway,
        connect_timeout_seconds=settings.provided.exchange.connect_timeout_seconds,
        read_timeout_seconds=settings.provided.exchange.read_timeout_seconds,
        max_connections=settings.provided.exchange.max_connections,
        on_token_refresh=providers.Object(metrics.exchange_token_refreshes.inc),
    )
    register_partner = providers.Factory(RegisterPartner, clock=clock)
    list_partners = providers.Factory(ListPartners)
    show_partner = providers.Factory(ShowPartner, gateway=partner_gateway)
    read_partner_records = providers.Factory(ReadPartnerRecords, gateway=partner_gateway)
    start_exchange_transaction = providers.Factory(StartTransaction, clock=clock)
    get_exchange_transaction = providers.Factory(GetTransaction)
    retry_send_job = providers.Factory(RetrySendJob)
    send_job_backlog = providers.Factory(SendJobBacklog, uow=uow)
    purge_delivered_transactions = providers.Factory(PurgeDeliveredTransactions, uow_factory=uow.provider)
    send_policy = providers.Factory(
        SendPolicy,
        lease=providers.Callable(lambda s: timedelta(seconds=s.exchange.lease_seconds), settings),
        max_concurrency=settings.provided.exchange.max_concurrency,
        prefetch=settings.provided.exchange.prefetch,
    )
    send_job_queue = _by_storage(
        profile,
        memory=providers.Factory(
            UnitOfWorkSendJobQueue,
            uow_factory=uow.provider,
            wake=providers.Factory(memory_job_wake, memory_database),
        ),
        postgres=providers.Factory(PostgresSendJobQueue, database=postgres, cipher=field_cipher, listener=listener),
    )
    # The send-job worker's use cases; its scheduler is made in craig/entrypoints/workers/send_jobs.py.
    dispatch_send_job = providers.Factory(DispatchSendJob, gateway=partner_gateway, clock=clock, policy=send_policy)
    recover_expired_send_jobs = providers.Factory(
        RecoverExpiredSendJobs, uow_factory=uow.provider, clock=clock, policy=send_policy
    )
    give_back_send_jobs = providers.Factory(GiveBackSendJobs, uow_factory=uow.provider)
    reserve_send_slot = providers.Factory(ReserveSendSlot, uow_factory=uow.provider, policy=send_policy)
    send_outcome_observer = providers.Object(metrics.observe_send_outcome)
    # --- intake, rule sets, field encryption (issue 8) --------------------------------------
    captcha = providers.Singleton(captcha_from, settings)
    rate_limiter = _by_storage(
        profile,
        memory=providers.Singleton(MemoryRateLimiter, db=memory_database),
        postgres=providers.Singleton(PostgresRateLimiter, database=postgres),
    )
    rule_cache = providers.Singleton(
        RuleSetCache,
        clock=clock,
        max_age=providers.Callable(lambda s: timedelta(seconds=s.rules.cache_max_age_seconds), settings),
    )
    intake_policy = providers.Singleton(intake_policy_from, settings)
    admit_intake_client = providers.Factory(AdmitIntakeClient, limiter=rate_limiter, policy=intake_policy)
    submit_referral = providers.Factory(
        SubmitReferral, captcha=captcha, cache=rule_cache, clock=clock, policy=intake_policy
    )
    create_rule_set = providers.Factory(CreateRuleSet, cache=rule_cache, instance_id=instance_id, clock=clock)
    get_rule_set = providers.Factory(GetRuleSet)
    list_rule_sets = providers.Factory(ListRuleSets)
    evaluate_rule_set = providers.Factory(EvaluateRuleSet, cache=rule_cache)
    evict_rule_cache = providers.Singleton(EvictOnInvalidation, cache=rule_cache, instance_id=instance_id)
    encrypted_column_store = _by_storage(
        profile,
        memory=providers.Singleton(MemoryEncryptedColumnStore, db=memory_database),
        postgres=providers.Singleton(PostgresEncryptedColumnStore, database=postgres),
    )
    rotate_keys = providers.Factory(
        RotateKeys,
        store=encrypted_column_store,
        rekeyer=field_encryptor,
        columns=providers.Callable(encrypted_columns),
        batch_size=KEY_ROTATION_BATCH_SIZE,
    )

    # --- casework: the intake queue, the case lifecycle, foster-home changes -------------------
    # Each is called with the request's unit of work, like the use cases above.
    response_times = providers.Singleton(response_times_from, settings)
    list_referrals = providers.Factory(ListReferrals, clock=clock, times=response_times)
    get_referral = providers.Factory(GetReferral, clock=clock, times=response_times)
    screen_referral = providers.Factory(ScreenReferral, clock=clock, times=response_times)
    referral_backlog = providers.Factory(ReferralBacklog, uow_factory=uow.provider, clock=clock, times=response_times)
    search_cases = providers.Factory(SearchCases)
    update_case = providers.Factory(UpdateCase, clock=clock)
    close_case = providers.Factory(CloseCase, clock=clock)
    reopen_case = providers.Factory(ReopenCase, clock=clock)
    unassign_worker = providers.Factory(UnassignWorker, clock=clock)
    list_case_placements = providers.Factory(ListCasePlacements)
    update_foster_home = providers.Factory(UpdateFosterHome, clock=clock)
    list_foster_home_page = providers.Factory(ListFosterHomePage)
    list_home_placements = providers.Factory(ListHomePlacements)
    list_contact_page = providers.Factory(ListContactPage)
    list_attachment_page = providers.Factory(ListAttachmentPage)
    list_partner_page = providers.Factory(ListPartnerPage)
    list_rule_set_page = providers.Factory(ListRuleSetPage)
    reindex_family_names = providers.Factory(
        ReindexFamilyNames, uow_factory=uow.provider, batch_size=KEY_ROTATION_BATCH_SIZE
    )


def build_container(settings: Settings) -> Container:
    container = Container(settings=settings)
    return container
