"""Wiring of the attachment features: the settings rule, the scanner loop and its metrics."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from dependency_injector import providers

from craig.entrypoints import metrics
from craig.entrypoints.operations.gauges import attachment_backlog
from craig.entrypoints.operations.status import section_table
from craig.entrypoints.settings import SettingsError, load_settings
from craig.entrypoints.workers.registry import loops_for
from tests.support import apps
from tests.support.clock import FakeClock

pytestmark = pytest.mark.unit


def sample(name: str) -> float:
    value = metrics.REGISTRY.get_sample_value(name)
    if value is None:  # a shared gauge, read from the database on a scrape
        value = metrics.SHARED_REGISTRY.get_sample_value(name)
    assert value is not None, name
    return value


@pytest.mark.parametrize(
    ("name", "value"),
    [("CRAIG_ATTACHMENTS__SCAN_GRACE_SECONDS", "5"), ("CRAIG_ATTACHMENTS__SCAN_INTERVAL_SECONDS", "0")],
)
def test_unsafe_scanner_timings_stop_startup(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        load_settings({name: value, "CRAIG_PROFILE": "memory", "CRAIG_ENCRYPTION_MODE": "optional"})


async def test_the_scanner_loop_runs_and_counts_removed_orphans(tmp_path: Path) -> None:
    container = apps.make_container(apps.make_settings("memory", tmp_path))
    clock = FakeClock()
    container.clock.override(providers.Object(clock))
    (loop,) = [loop for loop in loops_for(container) if loop.name == "attachment-scanner"]
    assert loop.interval.total_seconds() == 300

    store = container.object_store()
    orphan = f"cases/contacts/{uuid.uuid4()}/{uuid.uuid4()}/{uuid.uuid4()}/x.txt"
    await store.put(orphan, b"left over", "text/plain")
    clock.advance(3601)
    before = sample("craig_attachment_orphans_removed_total")
    assert await loop.run_once() is False
    assert sample("craig_attachment_orphans_removed_total") == before + 1
    assert await store.head(orphan) is None

    await attachment_backlog(container)()
    assert sample("craig_attachments_pending") == 0 and sample("craig_attachments_failed") == 0
    section = await section_table("attachments", container)
    assert section["contact_attachments: pending"] == 0 and section["contact_attachments: oldest pending age"] == "-"
    assert section["contact_attachments: failed, kept for an operator"] == 0
