"""The one composition root (dependency-injector).

The HTTP app, the workers and the CLI are all built from :class:`Container`. A profile picks a
whole adapter set once, in :data:`PROFILES`, the only place that maps a profile to anything: the
sets (memory, embedded, production) are in :mod:`craig.entrypoints.profiles` and provide the
same names (the unit of work, the stores, the bus, the object store, the resources that start
and stop them, the health checks). The root receives the chosen set as ``adapters`` and builds
the policies (:mod:`craig.entrypoints.policies`), the use cases, one block per feature area,
and what the background loops run (:mod:`craig.entrypoints.background`) from it.

Use cases receive their ports through their constructors. Those that run in a request's
transaction are factories called with it (``container.open_case(uow=request_uow)``); the HTTP
adapter does that in :mod:`craig.entrypoints.http.use_cases`, so no route sees the container.
:func:`build_container` shows the set's providers under their own names (``container.object_store``
is the set's provider itself), so a test that overrides one swaps the adapter for everything that
uses it: the use cases, the startup resources, the health checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from dependency_injector import containers, providers

from craig.adapters.clock import SystemClock
from craig.adapters.partners.http import HttpPartnerGateway
from craig.domain.constants import KEY_ROTATION_BATCH_SIZE
from craig.entrypoints import metrics
from craig.entrypoints.audit_wiring import AuditContainer
from craig.entrypoints.background import Background
from craig.entrypoints.policies import Policies
from craig.entrypoints.profiles import EmbeddedAdapters, MemoryAdapters, ProductionAdapters, ProfileWiring, as_given
from craig.entrypoints.secrets import with_dev_secrets
from craig.entrypoints.security_wiring import (
    captcha_from,
    encrypted_columns,
    field_cipher_from,
    field_encryptor_from,
)
from craig.entrypoints.settings import Profile, Settings
from craig.usecases.attachments import (
    REGISTERED_TABLES,
    AttachmentScanner,
    GetAttachment,
    ListAttachments,
    OpenAttachment,
    UploadAttachment,
)
from craig.usecases.attachments.failed_attachments import FailedAttachments
from craig.usecases.audit.case_history import ShowCaseHistory
from craig.usecases.audit.list_entries import ListAuditEntries
from craig.usecases.case_lifecycle.close_case import CloseCase
from craig.usecases.case_lifecycle.list_case_placements import ListCasePlacements
from craig.usecases.case_lifecycle.reindex_family_names import ReindexFamilyNames
from craig.usecases.case_lifecycle.reopen_case import ReopenCase
from craig.usecases.case_lifecycle.search_cases import SearchCases
from craig.usecases.case_lifecycle.unassign_worker import UnassignWorker
from craig.usecases.case_lifecycle.update_case import UpdateCase
from craig.usecases.cases import AssignWorker, GetCase, GetContact, ListCases, ListContacts, OpenCase, RecordContact
from craig.usecases.events import DeadLetterOperations
from craig.usecases.events.failing_events import FailingEvents
from craig.usecases.events.unrouted_operations import UnroutedOperations
from craig.usecases.exchange import (
    DispatchSendJob,
    GetTransaction,
    GiveBackSendJobs,
    ListPartners,
    PurgeDeliveredTransactions,
    ReadPartnerRecords,
    RecoverExpiredSendJobs,
    RegisterPartner,
    ReserveSendSlot,
    RetrySendJob,
    SendJobBacklog,
    ShowPartner,
    StartTransaction,
)
from craig.usecases.exchange.failed_send_jobs import FailedSendJobs
from craig.usecases.foster_homes.list_foster_home_page import ListFosterHomePage
from craig.usecases.foster_homes.list_home_placements import ListHomePlacements
from craig.usecases.foster_homes.update_foster_home import UpdateFosterHome
from craig.usecases.idempotency import IdempotentRequests
from craig.usecases.intake import AdmitIntakeClient, SubmitReferral
from craig.usecases.listings.list_attachment_page import ListAttachmentPage
from craig.usecases.listings.list_contact_page import ListContactPage
from craig.usecases.listings.list_partner_page import ListPartnerPage
from craig.usecases.listings.list_rule_set_page import ListRuleSetPage
from craig.usecases.operations import RotateKeys
from craig.usecases.placements import (
    CreateFosterHome,
    CreatePlacement,
    GetFosterHome,
    GetPlacement,
    ListFosterHomes,
    UpdatePlacement,
)
from craig.usecases.referrals.get_referral import GetReferral
from craig.usecases.referrals.list_referrals import ListReferrals
from craig.usecases.referrals.referral_backlog import ReferralBacklog
from craig.usecases.referrals.screen_referral import ScreenReferral
from craig.usecases.rules import (
    CreateRuleSet,
    EvaluateRuleSet,
    EvictOnInvalidation,
    GetRuleSet,
    ListRuleSets,
    RuleSetCache,
)


def _instance_id(settings: Settings) -> str:
    return settings.instance_id or f"craig-{uuid.uuid4().hex[:12]}"


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    instance_id = providers.Singleton(_instance_id, settings)
    clock = providers.Singleton(SystemClock)
    # encryption_mode + CRAIG_FIELD_ENCRYPTION_KEY: AES-256-GCM key ring, or plaintext
    # only when the mode is optional and no key is set.
    field_encryptor = providers.Singleton(field_encryptor_from, settings)
    field_cipher = providers.Singleton(field_cipher_from, field_encryptor, settings)
    policies = providers.Container(Policies, settings=settings)

    # --- the profile's adapter set (craig/entrypoints/profiles/), chosen in build_container ------
    adapters = providers.DependenciesContainer()
    uow = adapters.uow
    idempotency_store = adapters.idempotency_store
    outbox_relay_store = adapters.outbox_relay_store
    inbox_store = adapters.inbox_store
    event_bus = adapters.event_bus
    dead_letters = adapters.dead_letters
    unrouted_events = adapters.unrouted_events
    object_store = adapters.object_store
    rate_limiter = adapters.rate_limiter
    encrypted_column_store = adapters.encrypted_column_store
    send_job_queue = adapters.send_job_queue
    #: The database's URL, None when there is no database (memory).
    database_url = adapters.database_url
    # Starting and stopping (craig.entrypoints.runtime starts them in this order).
    database_running = adapters.database_running
    listener_running = adapters.listener_running
    object_store_running = adapters.object_store_running
    broker_running = adapters.broker_running
    health_checks = adapters.health_checks

    # --- idempotent writes ----------------------------------------------------------------------
    idempotent_requests = providers.Factory(IdempotentRequests, idempotency_store, policies.idempotency)

    # --- events: the relay's schedule, the inbox's redeliveries, dead letters --------------------
    outbox_poll_interval = policies.outbox_poll_interval
    outbox_relays = policies.outbox_relays
    inbox_retry_policy = policies.inbox_retry
    dead_letter_operations = providers.Factory(
        DeadLetterOperations, dead_letters=dead_letters, uow_factory=uow.provider
    )

    # --- cases, contacts, attachments -----------------------------------------------------------
    upload_validation = policies.upload_validation
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
        grace=policies.attachment_scan_grace,
        tables=providers.Object(REGISTERED_TABLES),
    )
    attachment_scan_interval = policies.attachment_scan_interval
    failed_attachments = providers.Factory(
        FailedAttachments,
        object_store=object_store,
        uow_factory=uow.provider,
        tables=providers.Object(REGISTERED_TABLES),
    )

    # --- foster homes and placements --------------------------------------------------------------
    # Each is called with the request's unit of work: ``container.update_placement(uow=uow)``.
    create_foster_home = providers.Factory(CreateFosterHome, clock=clock)
    get_foster_home = providers.Factory(GetFosterHome)
    list_foster_homes = providers.Factory(ListFosterHomes)
    create_placement = providers.Factory(CreatePlacement, clock=clock)
    get_placement = providers.Factory(GetPlacement)
    update_placement = providers.Factory(UpdatePlacement, clock=clock)

    # --- partner exchange ---------------------------------------------------------------------------
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
    failed_send_jobs = providers.Factory(FailedSendJobs, uow_factory=uow.provider)
    failing_events = providers.Factory(FailingEvents, uow_factory=uow.provider)
    send_job_backlog = providers.Factory(SendJobBacklog, uow=uow)
    purge_delivered_transactions = providers.Factory(PurgeDeliveredTransactions, uow_factory=uow.provider)
    send_policy = policies.send
    # The send-job worker's use cases; its scheduler is made in craig/entrypoints/workers/send_jobs.py.
    dispatch_send_job = providers.Factory(DispatchSendJob, gateway=partner_gateway, clock=clock, policy=send_policy)
    recover_expired_send_jobs = providers.Factory(
        RecoverExpiredSendJobs, uow_factory=uow.provider, clock=clock, policy=send_policy
    )
    give_back_send_jobs = providers.Factory(GiveBackSendJobs, uow_factory=uow.provider)
    reserve_send_slot = providers.Factory(ReserveSendSlot, uow_factory=uow.provider, policy=send_policy)
    send_outcome_observer = providers.Object(metrics.observe_send_outcome)

    # --- intake, rule sets, field encryption ------------------------------------------------------
    captcha = providers.Singleton(captcha_from, settings)
    rule_cache = providers.Singleton(RuleSetCache, max_age=policies.rule_cache_max_age)
    intake_policy = policies.intake
    admit_intake_client = providers.Factory(AdmitIntakeClient, limiter=rate_limiter, policy=intake_policy)
    submit_referral = providers.Factory(
        SubmitReferral, captcha=captcha, cache=rule_cache, clock=clock, policy=intake_policy
    )
    create_rule_set = providers.Factory(CreateRuleSet, cache=rule_cache, instance_id=instance_id, clock=clock)
    get_rule_set = providers.Factory(GetRuleSet)
    list_rule_sets = providers.Factory(ListRuleSets)
    evaluate_rule_set = providers.Factory(EvaluateRuleSet, cache=rule_cache)
    evict_rule_cache = providers.Singleton(EvictOnInvalidation, cache=rule_cache, instance_id=instance_id)
    rotate_keys = providers.Factory(
        RotateKeys,
        store=encrypted_column_store,
        rekeyer=field_encryptor,
        columns=providers.Callable(encrypted_columns),
        batch_size=KEY_ROTATION_BATCH_SIZE,
        uow_factory=uow.provider,  # where its keys_rotate entry is written
    )
    # audit trail: the readers run in the request's unit of work; the rest in audit_wiring.py
    list_audit_entries = providers.Factory(ListAuditEntries)
    show_case_history = providers.Factory(ShowCaseHistory)
    # audit trail (craig/entrypoints/audit_wiring.py)
    audit_chain_store = adapters.audit_chain_store
    audit_log = adapters.audit_log
    audit = providers.Container(AuditContainer, store=audit_chain_store, clock=clock)

    # --- the background loops: relay, subscriptions, cleanup (craig/entrypoints/background.py) ------
    background = providers.Container(
        Background,
        idempotency_store=idempotency_store,
        outbox_relay_store=outbox_relay_store,
        inbox_store=inbox_store,
        rate_limiter=rate_limiter,
        event_bus=event_bus,
        purge_delivered_transactions=purge_delivered_transactions,
        evict_rule_cache=evict_rule_cache,
        purge_audit=audit.purge_expired,
        policies=policies,
    )
    outbox_relay = background.outbox_relay
    subscriptions = background.subscriptions
    purge_expired = background.purge_expired
    # Replays offer unrouted events to the consumers the worker runs (the same list).
    unrouted_operations = providers.Factory(
        UnroutedOperations,
        unrouted=unrouted_events,
        bus=event_bus,
        subscriptions=subscriptions,
        uow_factory=uow.provider,
    )

    # --- casework: the intake queue, the case lifecycle, foster-home changes -------------------
    # Each is called with the request's unit of work, like the use cases above.
    response_times = policies.referral_response_times
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


#: The only place that maps a profile to anything.
PROFILES: Mapping[Profile, ProfileWiring] = {
    Profile.MEMORY: ProfileWiring(MemoryAdapters, with_dev_secrets, one_process_only=True),
    Profile.EMBEDDED: ProfileWiring(EmbeddedAdapters, with_dev_secrets),
    # Production must supply its own secrets: startup refuses when they are missing.
    Profile.PRODUCTION: ProfileWiring(ProductionAdapters, as_given),
}


def complete_settings(settings: Settings) -> Settings:
    """The settings as the profile completes them (development secrets for memory/embedded)."""
    return PROFILES[settings.profile].complete_settings(settings)


def one_process_only(settings: Settings) -> bool:
    """Whether the profile keeps its data in the process, so several server processes cannot
    share it (``craig serve --workers N``)."""
    return PROFILES[settings.profile].one_process_only


def build_container(settings: Settings, adapters: type[containers.DeclarativeContainer] | None = None) -> Container:
    """The root for ``settings``, on the profile's adapter set (or ``adapters``, a test's)."""
    container = Container(settings=settings)
    chosen: Any = (adapters or PROFILES[settings.profile].adapters)(
        settings=container.settings,
        clock=container.clock,
        cipher=container.field_cipher,
        instance_id=container.instance_id,
    )
    container.adapters.override(chosen)
    for name, provider in chosen.providers.items():
        if name not in chosen.dependencies:  # the set's own providers, not what it was given
            setattr(container, name, provider)
    return container
