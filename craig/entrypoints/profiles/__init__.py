"""The adapter sets a profile picks, one dependency-injector container each.

:class:`MemoryAdapters`, :class:`EmbeddedAdapters` and :class:`ProductionAdapters` provide the
same names: ``uow``, ``idempotency_store``, ``outbox_relay_store``, ``inbox_store``,
``rate_limiter``, ``encrypted_column_store``, ``audit_chain_store``, ``audit_log``, ``send_job_queue``, ``event_bus``,
``dead_letters``, ``unrouted_events``, ``object_store``, ``database_url``, the resources that
start and stop what the profile needs (``database_running``, ``listener_running``,
``object_store_running``, ``broker_running``; see :mod:`.lifecycle`) and ``health_checks``.
Each is given the settings, the clock, the field cipher and the instance id by the root.

The embedded and production sets share :class:`~.postgres.PostgresStorage` (storage in
PostgreSQL at a URL); the memory and embedded sets share :class:`~.brokers.InProcessBroker`.
Which profile gets which set is decided in one place: ``PROFILES`` in
:mod:`craig.entrypoints.container`.
"""

from collections.abc import Callable

import attrs
from dependency_injector import containers

from craig.entrypoints.profiles.embedded import EmbeddedAdapters
from craig.entrypoints.profiles.memory import MemoryAdapters
from craig.entrypoints.profiles.production import ProductionAdapters
from craig.entrypoints.settings import Settings

__all__ = ["EmbeddedAdapters", "MemoryAdapters", "ProductionAdapters", "ProfileWiring", "as_given"]


@attrs.frozen
class ProfileWiring:
    """What a profile decides: its adapter set, and how it completes the settings before the
    container is built (development secrets, or the settings as given)."""

    adapters: type[containers.DeclarativeContainer]
    complete_settings: Callable[[Settings], Settings]
    #: Its data lives in the process (memory): ``craig serve --workers N`` cannot share it.
    one_process_only: bool = False


def as_given(settings: Settings) -> Settings:
    """The settings step of a profile that must be given everything (production)."""
    return settings
