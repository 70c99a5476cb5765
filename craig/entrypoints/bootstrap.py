"""From the environment to a container: settings, dev secrets, logging."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from craig.entrypoints.container import Container, build_container, complete_settings
from craig.entrypoints.logging import configure_logging
from craig.entrypoints.secrets import DEV_SECRET_FILES, dev_secret_path
from craig.entrypoints.settings import Loaded, Needs, Settings, Source, read_environment, settable, validate
from craig.entrypoints.tracing import configure_tracing


def prepare(environ: Mapping[str, str] | None = None, needs: Needs = Needs.ALL) -> Loaded:
    """The settings in force (as the profile completes them: development secrets filled in for
    memory and embedded), validated for what ``needs`` names, and where each came from."""
    loaded = read_environment(environ)
    validate(loaded.settings, needs)
    configure_logging(loaded.settings.log_level, loaded.settings.logs_as_json)
    configure_tracing(environ)
    settings = complete_settings(loaded.settings)
    validate(settings, needs)
    known = settable()
    generated = {
        name: Source("file", str(dev_secret_path(settings, name)))
        for name in DEV_SECRET_FILES
        if known[name].value(settings) != known[name].value(loaded.settings)
    }
    return attrs.evolve(loaded, settings=settings, sources={**loaded.sources, **generated})


def prepare_settings(environ: Mapping[str, str] | None = None, needs: Needs = Needs.ALL) -> Settings:
    return prepare(environ, needs).settings


def bootstrap(environ: Mapping[str, str] | None = None, needs: Needs = Needs.ALL) -> Container:
    return build_container(prepare_settings(environ, needs))
