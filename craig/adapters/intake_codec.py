"""Referral <-> table columns, shared by the memory and PostgreSQL repositories.

The personal columns go through the field cipher here, and only here, so both adapters store
exactly the same ciphertext-bearing columns (and ``craig keys rotate`` treats them alike).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from craig.adapters.sealed_fields import seal, seal_optional, unseal, unseal_optional
from craig.domain.intake import Child, Referral, Reporter
from craig.domain.screening import priority_rank
from craig.ports.cipher import FieldCipher
from craig.ports.key_rotation import EncryptedColumn

#: The encrypted columns of ``referrals`` (listed for rotation in ``encrypted_columns.py``).
SEALED_COLUMNS = (
    "reporter_name",
    "reporter_phone",
    "reporter_email",
    "child_details",
    "concern",
    "location",
    "decision_reason",
)
REFERRAL_COLUMNS = tuple(EncryptedColumn("referrals", "id", name) for name in SEALED_COLUMNS)
_COLUMN = {column.column: column for column in REFERRAL_COLUMNS}


def referral_columns(cipher: FieldCipher, referral: Referral) -> dict[str, Any]:
    child = json.dumps({"first_name": referral.child.first_name, "age": referral.child.age})
    key = referral.id
    return {
        "id": referral.id,
        "reference": referral.reference,
        "reporter_name": seal(cipher, _COLUMN["reporter_name"], key, referral.reporter.name),
        "reporter_phone": seal_optional(cipher, _COLUMN["reporter_phone"], key, referral.reporter.phone),
        "reporter_email": seal_optional(cipher, _COLUMN["reporter_email"], key, referral.reporter.email),
        "child_details": seal(cipher, _COLUMN["child_details"], key, child),
        "concern": seal(cipher, _COLUMN["concern"], key, referral.concern),
        "location": seal_optional(cipher, _COLUMN["location"], key, referral.location),
        "priority": referral.priority,
        "triage_version": referral.triage_version,
        "matched_rule": referral.matched_rule,
        "received_at": referral.received_at,
        "priority_rank": priority_rank(referral.priority),
        "status": str(referral.status),
        "screened_at": referral.screened_at,
        "screened_by": referral.screened_by,
        "decision_reason": seal_optional(cipher, _COLUMN["decision_reason"], key, referral.decision_reason),
        "case_id": referral.case_id,
        "version": referral.version,
    }


def referral_from_columns(cipher: FieldCipher, row: Mapping[Any, Any]) -> Referral:
    """Raises :class:`craig.ports.errors.UndecryptableData` (a ``ValueError``) when a sealed
    column does not decrypt (tampered, moved from another row, unknown key)."""
    key = row["id"]
    child = json.loads(unseal(cipher, _COLUMN["child_details"], key, row["child_details"]))
    return Referral(
        id=row["id"],
        reference=row["reference"],
        reporter=Reporter(
            name=unseal(cipher, _COLUMN["reporter_name"], key, row["reporter_name"]),
            phone=unseal_optional(cipher, _COLUMN["reporter_phone"], key, row["reporter_phone"]),
            email=unseal_optional(cipher, _COLUMN["reporter_email"], key, row["reporter_email"]),
        ),
        child=Child(first_name=child["first_name"], age=child["age"]),
        concern=unseal(cipher, _COLUMN["concern"], key, row["concern"]),
        location=unseal_optional(cipher, _COLUMN["location"], key, row["location"]),
        received_at=row["received_at"],
        priority=row["priority"],
        triage_version=row["triage_version"],
        matched_rule=row["matched_rule"],
        status=row["status"],
        screened_at=row["screened_at"],
        screened_by=row["screened_by"],
        decision_reason=unseal_optional(cipher, _COLUMN["decision_reason"], key, row["decision_reason"]),
        case_id=row["case_id"],
        version=row["version"],
    )
