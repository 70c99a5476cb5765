"""Every ``resource_type`` the audit trail records, in one list.

A case's history (``GET /v1/cases/{id}/history``) shows every entry carrying the case's id
whatever its type, so an entry of a contact, attachment or placement names its case too.
"""

from __future__ import annotations

from typing import Final

CASE: Final = "case"
CONTACT: Final = "contact"
ATTACHMENT: Final = "attachment"
PLACEMENT: Final = "placement"

FOSTER_HOME: Final = "foster_home"
REFERRAL: Final = "referral"
PARTNER: Final = "partner"
PARTNER_RECORDS: Final = "partner_records"
SEND_JOB: Final = "send_job"
EXCHANGE_TRANSACTION: Final = "exchange_transaction"
RULE_SET: Final = "rule_set"
FIELD_KEY: Final = "field_key"
DEAD_LETTER: Final = "dead_letter"
UNROUTED_EVENT: Final = "unrouted_event"
#: An event of the transactional outbox (not yet published).
OUTBOX_EVENT: Final = "outbox_event"
AUDIT_ENTRY: Final = "audit_entry"
CASE_HISTORY: Final = "case_history"
#: An idempotent request answered again (its replay).
REQUEST: Final = "request"
