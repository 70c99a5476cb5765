"""Every encrypted column, for key rotation (``craig keys rotate``): (table, key column, column).

Features that store a sensitive column through ``uow.cipher`` list it here.
"""

from __future__ import annotations

ENCRYPTED_COLUMNS: list[tuple[str, str, str]] = [
    # contacts.summary (issue 5)
    ("contacts", "id", "summary"),
    # partners.client_secret (issue 7)
    ("partners", "id", "client_secret"),
    # referrals: reporter and child details (issue 8)
    ("referrals", "id", "reporter_name"),
    ("referrals", "id", "reporter_phone"),
    ("referrals", "id", "reporter_email"),
    ("referrals", "id", "child_details"),
    ("referrals", "id", "concern"),
    ("referrals", "id", "location"),
]
