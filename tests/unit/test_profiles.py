"""The composition root: a profile picks a whole adapter set in one place, every set provides what
the root uses, and what a profile needs starts in order and stops in reverse."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from dependency_injector import providers

import craig.entrypoints
from craig.entrypoints.container import PROFILES, Container, build_container, complete_settings
from craig.entrypoints.runtime import PARTS, StartupError, running
from craig.entrypoints.settings import AuthSettings, Profile, Settings
from tests.support import apps

pytestmark = pytest.mark.unit

ENTRYPOINTS = Path(craig.entrypoints.__file__).parent


def test_every_profile_has_an_adapter_set_providing_what_the_root_uses() -> None:
    assert set(PROFILES) == set(Profile)
    used = set(Container.adapters.providers)  # every name the root takes from the set
    assert {"uow", "event_bus", "object_store", "health_checks", *(f"{part}_running" for part in PARTS)} <= used
    for profile, wiring in PROFILES.items():
        missing = used - set(wiring.adapters.providers)
        assert not missing, f"{profile}: {sorted(missing)}"


def test_only_the_root_and_the_settings_rules_branch_on_the_profile() -> None:
    allowed = {
        ENTRYPOINTS / "container.py",
        ENTRYPOINTS / "settings" / "rules.py",
        ENTRYPOINTS / "settings" / "schema.py",
    }
    branching = [
        f"{path.relative_to(ENTRYPOINTS)}:{number}: {line.strip()}"
        for path in sorted(ENTRYPOINTS.rglob("*.py"))
        if path not in allowed
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bProfile\.[A-Z]", line)
    ]
    assert branching == []


def test_a_container_overrides_an_adapter_for_everything_that_uses_it(tmp_path: Path) -> None:
    """``container.object_store`` is the set's own provider: an override reaches the use cases,
    the resource that starts the store and the health check alike."""
    container = build_container(apps.make_settings("memory", tmp_path))
    assert container.object_store is container.adapters().object_store
    assert container.uow is container.adapters().uow


def test_development_secrets_complete_memory_and_embedded_settings_never_production(tmp_path: Path) -> None:
    for profile in (Profile.MEMORY, Profile.EMBEDDED):
        completed = complete_settings(Settings(profile=profile, data_dir=tmp_path / profile))
        assert completed.auth.jwt_secret and completed.field_encryption_key
        assert (tmp_path / profile / "secrets" / "jwt_secret").exists()
    production = Settings(profile=Profile.PRODUCTION, data_dir=tmp_path / "production", auth=AuthSettings())
    assert complete_settings(production) is production
    assert not (tmp_path / "production").exists()


def recording(log: list[str], part: str, *, fail: bool = False) -> Callable[..., AsyncIterator[None]]:
    async def resource(*_needs: object, **_options: object) -> AsyncIterator[None]:
        log.append(f"start {part}")
        if fail:
            raise StartupError(f"{part} is down")
        try:
            yield
        finally:
            log.append(f"stop {part}")

    return resource


def recorded(tmp_path: Path, log: list[str], failing: str | None = None) -> Container:
    container = build_container(apps.make_settings("memory", tmp_path))
    for part in PARTS:
        resource = providers.Resource(recording(log, part, fail=part == failing))
        getattr(container, f"{part}_running").override(resource)
    return container


async def test_parts_start_in_order_and_stop_in_reverse(tmp_path: Path) -> None:
    log: list[str] = []
    async with running(recorded(tmp_path, log)):
        assert log == ["start database", "start listener", "start object_store", "start broker"]
    assert log[4:] == ["stop broker", "stop object_store", "stop listener", "stop database"]


async def test_a_part_that_cannot_start_stops_what_started_before_it(tmp_path: Path) -> None:
    log: list[str] = []
    with pytest.raises(StartupError, match="object_store is down"):
        async with running(recorded(tmp_path, log, failing="object_store")):
            pytest.fail("the body must not run")
    assert log == ["start database", "start listener", "start object_store", "stop listener", "stop database"]


async def test_only_the_parts_asked_for_start(tmp_path: Path) -> None:
    log: list[str] = []
    async with running(recorded(tmp_path, log), parts=["database"]):
        pass
    assert log == ["start database", "stop database"]


async def test_the_in_process_broker_is_reached_through_its_database(tmp_path: Path) -> None:
    """`craig dlx list` asks for the broker only; with the in-process bus its queues are tables."""
    log: list[str] = []
    container = build_container(apps.make_settings("memory", tmp_path))
    container.database_running.override(providers.Resource(recording(log, "database")))
    async with running(container, parts=["broker"]):
        assert log == ["start database"]
    assert log == ["start database", "stop database"]
