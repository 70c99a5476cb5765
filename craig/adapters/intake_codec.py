"""Referral <-> table columns, shared by the memory and PostgreSQL repositories.

The personal columns go through the field cipher here, and only here, so both adapters store
exactly the same ciphertext-bearing columns (and ``craig keys rotate`` treats them alike).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from craig.domain.intake import Child, Referral, Reporter
from craig.ports.cipher import FieldCipher

#: The encrypted columns of ``referrals`` (listed for rotation in ``encrypted_columns.py``).
SEALED_COLUMNS = (
    "reporter_name",
    "reporter_phone",
    "reporter_email",
    "child_details",
    "concern",
    "location",
)


def _seal(cipher: FieldCipher, value: str | None) -> str | None:
    return cipher.encrypt(value) if value is not None else None


def _open(cipher: FieldCipher, value: str | None) -> str | None:
    return cipher.decrypt(value) if value is not None else None


def referral_columns(cipher: FieldCipher, referral: Referral) -> dict[str, Any]:
    child = json.dumps({"first_name": referral.child.first_name, "age": referral.child.age})
    return {
        "id": referral.id,
        "reference": referral.reference,
        "reporter_name": cipher.encrypt(referral.reporter.name),
        "reporter_phone": _seal(cipher, referral.reporter.phone),
        "reporter_email": _seal(cipher, referral.reporter.email),
        "child_details": cipher.encrypt(child),
        "concern": cipher.encrypt(referral.concern),
        "location": _seal(cipher, referral.location),
        "priority": referral.priority,
        "triage_version": referral.triage_version,
        "matched_rule": referral.matched_rule,
        "received_at": referral.received_at,
    }


def referral_from_columns(cipher: FieldCipher, row: Mapping[Any, Any]) -> Referral:
    """Raises ``ValueError`` when a sealed column does not decrypt (tampered, unknown key)."""
    child = json.loads(cipher.decrypt(row["child_details"]))
    return Referral(
        id=row["id"],
        reference=row["reference"],
        reporter=Reporter(
            name=cipher.decrypt(row["reporter_name"]),
            phone=_open(cipher, row["reporter_phone"]),
            email=_open(cipher, row["reporter_email"]),
        ),
        child=Child(first_name=child["first_name"], age=child["age"]),
        concern=cipher.decrypt(row["concern"]),
        location=_open(cipher, row["location"]),
        received_at=row["received_at"],
        priority=row["priority"],
        triage_version=row["triage_version"],
        matched_rule=row["matched_rule"],
    )
