"""From the environment to a container: settings, dev secrets, logging."""

from __future__ import annotations

from collections.abc import Mapping

from craig.entrypoints.container import Container, build_container
from craig.entrypoints.logging import configure_logging
from craig.entrypoints.secrets import with_dev_secrets
from craig.entrypoints.settings import Settings, load_settings, validate


def prepare_settings(environ: Mapping[str, str] | None = None) -> Settings:
    settings = load_settings(environ)
    configure_logging(settings.log_level, settings.log_json)
    settings = with_dev_secrets(settings)
    validate(settings)
    return settings


def bootstrap(environ: Mapping[str, str] | None = None) -> Container:
    return build_container(prepare_settings(environ))
