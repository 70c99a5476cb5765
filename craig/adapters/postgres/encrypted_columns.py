"""Every encrypted column, for key rotation (``craig keys rotate``): (table, key column, column).

Features that store a sensitive column through ``uow.cipher`` list it here.
"""

from __future__ import annotations

ENCRYPTED_COLUMNS: list[tuple[str, str, str]] = [
    # contacts.summary (issue 5)
    # partners.client_secret (issue 7)
    # referrals: reporter and child details (issue 8)
]
