"""``python -m bench._craig_process <craig arguments>``: the ``craig`` command for benchmarks.

The embedded profile's adapter set (the in-process bus, attachments as files under
``CRAIG_DATA_DIR``) on the PostgreSQL at ``CRAIG_DATABASE__URL``, migrated beforehand (the
schema is checked, as in production), instead of a PostgreSQL of its own. That is how the test
suite runs its servers, and it is what lets two Craig servers, one recording audit entries and
one not (``CRAIG_AUDIT__ENABLED=false``, which the production profile refuses), share one
database. Without ``CRAIG_DATABASE__URL`` it is the plain ``craig`` command.

The adapter set is swapped when this module is imported, so processes that re-import it
(``multiprocessing``'s spawn) get the same one.
"""

from __future__ import annotations

import os
import sys
from typing import Any, cast

from dependency_injector import providers

from craig.entrypoints import container as root
from craig.entrypoints.cli import main
from craig.entrypoints.profiles import EmbeddedAdapters, ProfileWiring
from craig.entrypoints.profiles.lifecycle import ExternalPostgres
from craig.entrypoints.settings import Profile


def embedded_on_external_postgres(**given: Any) -> Any:
    adapters = EmbeddedAdapters(**given)
    adapters.postgres_server.override(providers.Singleton(ExternalPostgres))
    adapters.database_url.override(given["settings"].provided.database.url)
    adapters.schema.override(providers.Object("check"))
    return adapters


if os.environ.get("CRAIG_DATABASE__URL") and os.environ.get("CRAIG_PROFILE") == Profile.EMBEDDED.value:
    embedded = root.PROFILES[Profile.EMBEDDED]
    cast(dict[Profile, ProfileWiring], root.PROFILES)[Profile.EMBEDDED] = ProfileWiring(
        cast(Any, embedded_on_external_postgres), embedded.complete_settings
    )

if __name__ == "__main__":
    sys.exit(main())
