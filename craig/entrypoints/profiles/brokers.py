"""The two brokers: the in-process bus (memory and embedded profiles) and RabbitMQ (production).

Each provides the event bus, its dead letters and its unrouted events, and the resource that
reaches it. The in-process bus keeps its queues in the inbox store, so reaching it is reaching
the database: its resource is given the database's, which then starts first.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from craig.adapters.inprocess.bus import InboxDeadLetters, InboxUnroutedEvents, InProcessBus
from craig.adapters.rabbit.bus import RabbitEventBus
from craig.adapters.rabbit.dead_letters import RabbitDeadLetters
from craig.adapters.rabbit.unrouted import RabbitUnroutedEvents
from craig.entrypoints.profiles.lifecycle import broker_ping, broker_reached, in_the_database
from craig.entrypoints.settings import Settings
from craig.ports.inbox import InboxStore


class InProcessBroker(containers.DeclarativeContainer):
    inbox_store: providers.Dependency[InboxStore] = providers.Dependency()
    instance_id = providers.Dependency(instance_of=str)
    #: The database's resource.
    database_running: providers.Dependency[None] = providers.Dependency()

    event_bus = providers.Singleton(InProcessBus, inbox=inbox_store, instance_id=instance_id)
    dead_letters = providers.Singleton(InboxDeadLetters, inbox=inbox_store)
    unrouted_events = providers.Singleton(InboxUnroutedEvents, inbox=inbox_store)
    broker_running = providers.Resource(in_the_database, database_running)


class RabbitMQBroker(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    instance_id = providers.Dependency(instance_of=str)

    event_bus = providers.Singleton(
        RabbitEventBus,
        url=settings.provided.broker.url,
        events_exchange=settings.provided.broker.events_exchange,
        dlx_exchange=settings.provided.broker.dlx_exchange,
        queue_prefix=settings.provided.broker.queue_prefix,
        instance_id=instance_id,
    )
    dead_letters = providers.Singleton(RabbitDeadLetters, bus=event_bus)
    unrouted_events = providers.Singleton(RabbitUnroutedEvents, bus=event_bus)
    broker_running = providers.Resource(broker_reached, event_bus)
    broker_check = providers.Callable(broker_ping, event_bus.provider)
