"""Run Alembic programmatically (``craig db upgrade``, test fixtures)."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

import craig
from alembic import command

ALEMBIC_DIR = Path(craig.__file__).resolve().parent.parent / "alembic"


def alembic_config(url: str) -> Config:
    config = Config(str(ALEMBIC_DIR.parent / "alembic.ini"))
    config.set_main_option("script_location", str(ALEMBIC_DIR))
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
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    assert head is not None
    return head
