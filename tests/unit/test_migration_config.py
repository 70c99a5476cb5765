"""Craig configures Alembic in code; the developers' alembic.ini must find the same scripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from craig.adapters.postgres.migrations import FILE_TEMPLATE, MIGRATIONS_DIR, alembic_config, head_revision

pytestmark = pytest.mark.unit

CHECKOUT = Path(__file__).resolve().parents[2]


def test_the_code_reads_the_migrations_inside_the_package() -> None:
    scripts = ScriptDirectory.from_config(alembic_config("postgresql://unused"))
    assert Path(scripts.dir) == MIGRATIONS_DIR == CHECKOUT / "craig" / "migrations"
    assert alembic_config("").config_file_name is None
    revisions = [script.revision for script in scripts.walk_revisions()]
    assert len(revisions) == len(list((MIGRATIONS_DIR / "versions").glob("0*.py")))
    assert revisions[0] == head_revision()


def test_the_developers_alembic_ini_points_at_the_same_scripts() -> None:
    config = Config(str(CHECKOUT / "alembic.ini"))
    scripts = ScriptDirectory.from_config(config)
    assert Path(scripts.dir).resolve() == MIGRATIONS_DIR
    assert scripts.get_current_head() == head_revision()
    assert config.get_main_option("file_template") == FILE_TEMPLATE
