"""Every route of the API, by router. Features add their handlers here."""

from __future__ import annotations

from typing import Any

from craig.entrypoints.http.routes.me import me

#: Under ``/v1``: Bearer JWT required; idempotency applies to POST and PATCH.
V1_ROUTES: list[Any] = [
    me,
    # cases, contacts, attachments (issue 5)
    # foster homes and placements (issue 6)
    # partner exchange (issue 7)
    # rule sets (issue 8)
]

#: Under ``/intake``: public, anonymous; idempotency applies with a scope per route.
INTAKE_ROUTES: list[Any] = [
    # public referrals (issue 8)
]
