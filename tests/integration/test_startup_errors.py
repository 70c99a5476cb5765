"""Startup refuses with one line that names the setting or the dependency, and how to fix it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from dependency_injector import providers

from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.postgres import migrations
from craig.entrypoints.container import build_container
from craig.entrypoints.runtime import StartupError, running
from craig.entrypoints.settings import BrokerSettings, DatabaseSettings, Profile
from tests.support.apps import make_container, make_settings
from tests.support.services import free_port, scratch_database

pytestmark = pytest.mark.integration

CRAIG = str(Path(sys.executable).parent / "craig")


def _craig(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRAIG_")}
    return subprocess.run([CRAIG, *args], env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_production_without_its_dependencies_refuses_in_one_line(tmp_path: Path) -> None:
    result = _craig("serve", CRAIG_PROFILE="production", CRAIG_DATA_DIR=str(tmp_path))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("craig:")]
    assert len(lines) == 1 and "CRAIG_DATABASE__URL" in lines[0] and "CRAIG_BROKER__URL" in lines[0]


def test_a_misspelt_setting_is_named_with_a_suggestion(tmp_path: Path) -> None:
    result = _craig("status", CRAIG_DATABASE_URL="postgresql://x", CRAIG_DATA_DIR=str(tmp_path))
    assert result.returncode == 2
    assert "CRAIG_DATABASE_URL is not a Craig setting; did you mean CRAIG_DATABASE__URL?" in result.stderr


async def test_an_unreachable_database_is_named(tmp_path: Path) -> None:
    settings = make_settings("postgres", tmp_path, f"postgresql://postgres@127.0.0.1:{free_port()}/craig")
    with pytest.raises(StartupError, match=r"cannot reach PostgreSQL.*CRAIG_DATABASE__URL"):
        async with running(make_container(settings)):
            pass


async def test_an_unreachable_broker_is_named(tmp_path: Path, pg_url: str) -> None:
    settings = attrs.evolve(
        make_settings("postgres", tmp_path, pg_url),
        profile=Profile.PRODUCTION,
        database=DatabaseSettings(url=pg_url),
        broker=BrokerSettings(url=f"amqp://guest:guest@127.0.0.1:{free_port()}/"),
    )
    container = build_container(settings)  # the real production adapter set
    container.object_store.override(providers.Singleton(MemoryObjectStore))  # only the broker is missing
    with pytest.raises(StartupError, match=r"RabbitMQ.*CRAIG_BROKER__URL"):
        async with running(container):
            pass


async def test_production_refuses_an_unmigrated_database_and_names_the_revision(
    tmp_path: Path, pg_server_url: str
) -> None:
    with scratch_database(pg_server_url) as url:
        settings = attrs.evolve(
            make_settings("postgres", tmp_path, url),
            profile=Profile.PRODUCTION,
            database=DatabaseSettings(url=url),
            broker=BrokerSettings(url=f"amqp://guest:guest@127.0.0.1:{free_port()}/"),
        )
        container = build_container(settings)
        message = (
            rf"schema is at revision none but this Craig needs {migrations.head_revision()}; run `craig db upgrade`"
        )
        with pytest.raises(StartupError, match=message):
            async with running(container):
                pass
        await container.postgres().dispose()
