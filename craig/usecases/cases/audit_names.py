"""The ``resource_type`` each casework use case records in the audit trail.

A case's history (``GET /v1/cases/{id}/history``) shows every entry carrying the case's id
whatever its type, so an entry of a contact, attachment or placement names its case too.
"""

from __future__ import annotations

from typing import Final

CASE: Final = "case"
CONTACT: Final = "contact"
ATTACHMENT: Final = "attachment"
PLACEMENT: Final = "placement"
