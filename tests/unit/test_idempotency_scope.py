"""The path an Idempotency-Key is scoped to."""

from __future__ import annotations

import uuid
from typing import Any

from craig.entrypoints.http.idempotency import canonical_path

CASE = uuid.UUID("0192f1c4-0000-7000-8000-000000000001")


def test_the_route_template_with_each_parsed_parameter_in_its_one_spelling() -> None:
    scope: dict[str, Any] = {
        "path": f"/v1/cases/{{{str(CASE).upper()}}}/contacts",
        "path_template": "/v1/cases/{case_id}/contacts",
        "path_params": {"case_id": CASE},
    }
    assert canonical_path(scope) == f"/v1/cases/{CASE}/contacts"  # type: ignore[arg-type]


def test_a_template_naming_a_parameter_the_route_did_not_parse_keeps_the_request_path() -> None:
    """Never the bare template: every resource under it would share one scope."""
    scope: dict[str, Any] = {
        "path": f"/v1/cases/{CASE}/contacts",
        "path_template": "/v1/cases/{id}/contacts",
        "path_params": {"case_id": CASE},
    }
    assert canonical_path(scope) == f"/v1/cases/{CASE}/contacts"  # type: ignore[arg-type]


def test_without_a_template_the_request_path() -> None:
    assert canonical_path({"path": "/intake/referrals"}) == "/intake/referrals"  # type: ignore[arg-type]
