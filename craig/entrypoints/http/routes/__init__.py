"""Every route of the API, by router. Features add their handlers here."""

from __future__ import annotations

from typing import Any

from craig.entrypoints.http.routes.attachments import ROUTES as ATTACHMENT_ROUTES
from craig.entrypoints.http.routes.audit import ROUTES as AUDIT_ROUTES
from craig.entrypoints.http.routes.case_lifecycle import ROUTES as CASE_LIFECYCLE_ROUTES
from craig.entrypoints.http.routes.cases import ROUTES as CASE_ROUTES
from craig.entrypoints.http.routes.exchange import ROUTES as EXCHANGE_ROUTES
from craig.entrypoints.http.routes.foster_homes import ROUTES as FOSTER_HOME_ROUTES
from craig.entrypoints.http.routes.intake import ROUTES as INTAKE_REFERRAL_ROUTES
from craig.entrypoints.http.routes.me import me
from craig.entrypoints.http.routes.placements import ROUTES as PLACEMENT_ROUTES
from craig.entrypoints.http.routes.referrals import ROUTES as REFERRAL_ROUTES
from craig.entrypoints.http.routes.rules import ROUTES as RULE_SET_ROUTES

#: Under ``/v1``: Bearer JWT required; idempotency applies to POST and PATCH.
V1_ROUTES: list[Any] = [
    me,
    # cases, contacts, attachments
    *CASE_ROUTES,
    *ATTACHMENT_ROUTES,
    # foster homes and placements
    *PLACEMENT_ROUTES,
    # partner exchange
    *EXCHANGE_ROUTES,
    # triage rule sets
    *RULE_SET_ROUTES,
    # the audit trail
    *AUDIT_ROUTES,
    # casework: the intake queue, the case lifecycle, foster-home changes
    *REFERRAL_ROUTES,
    *CASE_LIFECYCLE_ROUTES,
    *FOSTER_HOME_ROUTES,
]

#: Under ``/intake``: public, anonymous; idempotency applies with a scope per route.
INTAKE_ROUTES: list[Any] = [
    # public referrals
    *INTAKE_REFERRAL_ROUTES,
]
