"""A command validates only the settings of what it works with: `craig db upgrade` in production
needs CRAIG_DATABASE__URL and nothing else; `craig serve` needs everything."""

from __future__ import annotations

import functools
import operator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.entrypoints.settings import Needs, SettingsError, load_settings, read_environment, validate

pytestmark = pytest.mark.unit

#: The production settings and the dependency each one belongs to.
PRODUCTION = {
    "CRAIG_DATABASE__URL": ("postgresql://db/craig", Needs.DATABASE),
    "CRAIG_BROKER__URL": ("amqp://rabbit/", Needs.BROKER),
    "CRAIG_OBJECT_STORE__ENDPOINT": ("s3:9000", Needs.OBJECT_STORE),
    "CRAIG_OBJECT_STORE__ACCESS_KEY": ("a", Needs.OBJECT_STORE),
    "CRAIG_OBJECT_STORE__SECRET_KEY": ("b", Needs.OBJECT_STORE),
    "CRAIG_AUTH__JWT_SECRET": ("x" * 40, Needs.TOKENS),
    "CRAIG_FIELD_ENCRYPTION_KEY": ("A" * 43 + "=", Needs.FIELD_ENCRYPTION),
}
SINGLE_NEEDS = [Needs.DATABASE, Needs.BROKER, Needs.OBJECT_STORE, Needs.TOKENS, Needs.FIELD_ENCRYPTION]


def problem(environment: dict[str, str], needs: Needs = Needs.ALL) -> str | None:
    try:
        validate(read_environment({"CRAIG_PROFILE": "production", **environment}).settings, needs)
    except SettingsError as error:
        return str(error)
    return None


def test_migrating_in_production_needs_the_database_url_alone() -> None:
    only_the_database = {"CRAIG_DATABASE__URL": "postgresql://db/craig"}
    assert problem(only_the_database, Needs.DATABASE) is None
    assert problem({}, Needs.DATABASE) == (
        "profile=production needs CRAIG_DATABASE__URL; set it or use CRAIG_PROFILE=embedded"
    )
    assert problem(only_the_database) == (
        "profile=production needs CRAIG_BROKER__URL, CRAIG_OBJECT_STORE__ENDPOINT, "
        "CRAIG_OBJECT_STORE__ACCESS_KEY, CRAIG_OBJECT_STORE__SECRET_KEY; set them or use CRAIG_PROFILE=embedded"
    )


def test_rules_about_no_dependency_in_particular_apply_to_every_command() -> None:
    environment = {"CRAIG_DATABASE__URL": "postgresql://db/craig", "CRAIG_DATABASE__POOL_SIZE": "0"}
    assert problem(environment, Needs.DATABASE) == (
        "CRAIG_DATABASE__POOL_SIZE must be positive (got 0); remove it to use the default"
    )


def test_load_settings_still_checks_everything() -> None:
    with pytest.raises(SettingsError, match="CRAIG_BROKER__URL"):
        load_settings({"CRAIG_PROFILE": "production", "CRAIG_DATABASE__URL": "postgresql://db/craig"})


@given(
    present=st.sets(st.sampled_from(sorted(PRODUCTION))),
    needs=st.sets(st.sampled_from(SINGLE_NEEDS), min_size=1),
)
def test_a_command_is_refused_exactly_for_the_missing_settings_it_needs(present: set[str], needs: set[Needs]) -> None:
    wanted = functools.reduce(operator.or_, needs)
    environment = {name: PRODUCTION[name][0] for name in present}
    missing = [name for name, (_, about) in PRODUCTION.items() if about & wanted and name not in present]
    found = problem(environment, wanted)
    dependencies = [name for name in missing if not name.startswith(("CRAIG_AUTH", "CRAIG_FIELD"))]
    if dependencies:
        assert found is not None and found.startswith(f"profile=production needs {', '.join(dependencies)};")
    elif missing:
        assert found is not None and missing[0] in found
    else:
        assert found is None
