"""The audit trail in the composition root: ``container.audit``, the sealer among the worker
loops, the audit purge in the cleanup pass, and the retention setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from craig.entrypoints.settings import SettingsError, load_settings
from craig.entrypoints.workers.registry import cleanup_loop, loops_for
from tests.support import apps
from tests.support.audit import entry, record

pytestmark = pytest.mark.unit


async def test_the_sealer_loop_seals_and_the_cleanup_pass_purges_audit_entries(tmp_path: Path) -> None:
    container = apps.make_container(apps.make_settings("memory", tmp_path))
    loops = {loop.name: loop for loop in loops_for(container)}
    assert "audit-sealer" in loops and loops["audit-sealer"].interval.total_seconds() <= 60
    await record(container.uow(), entry(), entry())
    assert await loops["audit-sealer"].run_once() is False  # not a full batch
    head = await container.audit.head()()
    assert head is not None and head.seq == 2
    assert await cleanup_loop(container).run_once() is False
    floor = await container.audit.store().retention_floor()
    assert floor.retention.days == container.settings().audit.retention_days == 2557


def test_the_retention_setting_is_read_and_checked() -> None:
    settings = load_settings({"CRAIG_PROFILE": "memory", "CRAIG_AUDIT__RETENTION_DAYS": "3650"})
    assert settings.audit.retention_days == 3650
    with pytest.raises(SettingsError, match="CRAIG_AUDIT__RETENTION_DAYS"):
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_AUDIT__RETENTION_DAYS": "0"})
