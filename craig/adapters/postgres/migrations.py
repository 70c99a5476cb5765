"""Run Alembic programmatically (``craig db upgrade``, test fixtures).

The migrations ship inside the package (``craig/migrations``), so an installed wheel migrates
without a source tree and without an ``alembic.ini``: the configuration is built here. The
repository's ``alembic.ini`` exists only for developers running the ``alembic`` command itself
(``alembic revision -m ...``) and points at the same directory.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

import craig.migrations

MIGRATIONS_DIR = Path(craig.migrations.__file__).resolve().parent
FILE_TEMPLATE = "%(rev)s_%(slug)s"


def alembic_config(url: str) -> Config:
    """Alembic's configuration for the database at ``url``; no file is read."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("file_template", FILE_TEMPLATE.replace("%", "%%"))
    config.attributes["url"] = url
    return config


def upgrade_to_head(url: str) -> None:
    """Apply every revision (sync; Alembic runs its own event loop)."""
    command.upgrade(alembic_config(url), "head")


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def head_revision() -> str:
    """The newest revision this code knows."""
    head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    assert head is not None
    return head
