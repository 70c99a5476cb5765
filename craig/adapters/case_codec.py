"""Case <-> table columns, shared by the memory and PostgreSQL repositories.

Title, family name and closure reason go through the field cipher here, and only here; the
family name's blind index is made here too, from its normalised form, so both adapters store
the same columns and find the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from craig.adapters.sealed_fields import (
    CASE_CLOSE_REASON,
    CASE_FAMILY_NAME,
    CASE_TITLE,
    seal,
    seal_optional,
    unseal,
    unseal_optional,
)
from craig.domain.case_search import FAMILY_NAME_INDEX
from craig.domain.cases import Case, CaseStatus, normalise_family_name
from craig.ports.cipher import FieldCipher


def family_name_index(cipher: FieldCipher, family_name: str | None) -> str | None:
    if family_name is None:
        return None
    return cipher.blind_index(FAMILY_NAME_INDEX, normalise_family_name(family_name))


def family_name_candidates(cipher: FieldCipher, normalised: str) -> list[str]:
    return cipher.blind_index_candidates(FAMILY_NAME_INDEX, normalised)


def case_columns(cipher: FieldCipher, case: Case) -> dict[str, Any]:
    """Every stored column but the assignments."""
    return {
        "id": case.id,
        "title": seal(cipher, CASE_TITLE, case.id, case.title),
        "family_name": seal_optional(cipher, CASE_FAMILY_NAME, case.id, case.family_name),
        "family_name_index": family_name_index(cipher, case.family_name),
        "opened_at": case.opened_at,
        "created_by": case.created_by,
        "created_at": case.created_at,
        "status": case.status.value,
        "closed_at": case.closed_at,
        "close_reason": seal_optional(cipher, CASE_CLOSE_REASON, case.id, case.close_reason),
        "referral_id": case.referral_id,
        "updated_at": case.updated_at,
        "version": case.version,
    }


def case_from_columns(cipher: FieldCipher, row: Mapping[Any, Any], workers: Iterable[Any]) -> Case:
    """Raises :class:`craig.ports.errors.UndecryptableData` for a sealed column that does not decrypt."""
    return Case(
        id=row["id"],
        title=unseal(cipher, CASE_TITLE, row["id"], row["title"]),
        family_name=unseal_optional(cipher, CASE_FAMILY_NAME, row["id"], row["family_name"]),
        opened_at=row["opened_at"],
        created_by=row["created_by"],
        created_at=row["created_at"],
        assigned_workers=frozenset(workers),
        status=CaseStatus(row["status"]),
        closed_at=row["closed_at"],
        close_reason=unseal_optional(cipher, CASE_CLOSE_REASON, row["id"], row["close_reason"]),
        referral_id=row["referral_id"],
        updated_at=row["updated_at"],
        version=row["version"],
    )
