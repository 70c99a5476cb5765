"""Every encrypted column, for key rotation (``craig keys rotate``): (table, key column, column).

Features that store a sensitive column through ``uow.cipher`` list it here.
"""

from __future__ import annotations

from craig.adapters.intake_codec import SEALED_COLUMNS

ENCRYPTED_COLUMNS: list[tuple[str, str, str]] = [
    # contacts.summary (issue 5)
    ("contacts", "id", "summary"),
    # partners.client_secret (issue 7)
    ("partners", "id", "client_secret"),
    # referrals: reporter and child details (issue 8), the columns the referral codec seals
    *(("referrals", "id", column) for column in SEALED_COLUMNS),
]
