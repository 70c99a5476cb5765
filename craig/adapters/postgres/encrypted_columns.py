"""Every encrypted column, for key rotation (``craig keys rotate``) and the read policy.

Features that store a sensitive column through ``uow.cipher`` define it in
:mod:`craig.adapters.sealed_fields` and list it here.
"""

from __future__ import annotations

from craig.adapters.intake_codec import REFERRAL_COLUMNS
from craig.adapters.sealed_fields import (
    ATTACHMENT_FILE_NAME,
    ATTACHMENT_TYPE,
    CASE_CLOSE_REASON,
    CASE_FAMILY_NAME,
    CASE_TITLE,
    CONTACT_SUMMARY,
    PARTNER_CLIENT_SECRET,
    RESPONSE_BODY,
    SEND_JOB_PAYLOAD,
    TRANSACTION_PAYLOAD,
)
from craig.ports.key_rotation import EncryptedColumn

ENCRYPTED_COLUMNS: list[EncryptedColumn] = [
    CASE_TITLE,
    CASE_FAMILY_NAME,
    CASE_CLOSE_REASON,
    CONTACT_SUMMARY,
    ATTACHMENT_FILE_NAME,
    ATTACHMENT_TYPE,
    PARTNER_CLIENT_SECRET,
    TRANSACTION_PAYLOAD,
    SEND_JOB_PAYLOAD,
    # referrals: reporter and child details, the columns the referral codec seals
    *REFERRAL_COLUMNS,
    RESPONSE_BODY,
]


def plaintext_columns() -> list[tuple[str, str]]:
    """The columns whose rows stored before they were encrypted are read as they are."""
    return [(c.table, c.column) for c in ENCRYPTED_COLUMNS if c.plaintext_history]
