"""Every event Craig stages: its type, the source that stages it, its aggregate and its payload.

``name`` is the envelope's ``type`` and the broker's routing key. Events of one aggregate
(``aggregate_type``/``aggregate_id``) are published in the order they were staged. ``payload``
names every field of the payload with its meaning; a staged event carries exactly these fields.
Events sit unencrypted in the outbox and the inboxes and cross the broker in clear, so no
payload carries personal details: ids, types, sizes, statuses and versions only.

The use cases stage events only through these constants (``new_event(CASE_OPENED, ...)``).
``tests/unit/test_event_catalogue.py`` drives every use case that stages an event and checks
each staged event against its entry here, and README's event catalogue table against this
module.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import attrs


def _frozen(fields: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(fields))


@attrs.frozen
class EventType:
    """One kind of event: ``payload`` maps each payload field to its meaning."""

    name: str
    source: str
    aggregate_type: str
    payload: Mapping[str, str] = attrs.field(converter=_frozen, eq=False)
    #: When it is staged.
    when: str = attrs.field(eq=False)

    @property
    def payload_keys(self) -> frozenset[str]:
        return frozenset(self.payload)


# --- Sources --------------------------------------------------------------------------------
CASES_SOURCE: Final = "craig-cases"
PLACEMENTS_SOURCE: Final = "craig-placements"
EXCHANGE_SOURCE: Final = "craig-exchange"
INTAKE_SOURCE: Final = "craig-intake"
RULES_SOURCE: Final = "craig-rules"

# --- Cases, contacts and attachments ------------------------------------------------------------
CASE_OPENED: Final = EventType(
    "cases.case_opened",
    CASES_SOURCE,
    "case",
    {
        "case_id": "the new case",
        "created_by": "the principal (sub) who opened it",
        "referral_id": "the referral it was opened for when screened in, else null",
    },
    "a case is opened (directly, or by screening a referral in)",
)
CASE_ASSIGNED: Final = EventType(
    "cases.case_assigned",
    CASES_SOURCE,
    "case",
    {
        "case_id": "the case",
        "worker_sub": "the case worker now assigned",
        "assigned_by": "the supervisor or admin who assigned them",
    },
    "a case worker is assigned to a case, only when the assignment is new",
)
CASE_UNASSIGNED: Final = EventType(
    "cases.case_unassigned",
    CASES_SOURCE,
    "case",
    {
        "case_id": "the case",
        "worker_sub": "the case worker no longer assigned",
        "unassigned_by": "the supervisor or admin who unassigned them",
    },
    "a case worker is unassigned from a case",
)
CASE_UPDATED: Final = EventType(
    "cases.case_updated",
    CASES_SOURCE,
    "case",
    {
        "case_id": "the case",
        "fields": "the names of the fields that changed (never their values)",
        "updated_by": "the principal (sub) who changed them",
    },
    "a case's title or family name changes",
)
CASE_CLOSED: Final = EventType(
    "cases.case_closed",
    CASES_SOURCE,
    "case",
    {"case_id": "the case", "closed_by": "the principal (sub) who closed it (never the reason)"},
    "an open case is closed",
)
CASE_REOPENED: Final = EventType(
    "cases.case_reopened",
    CASES_SOURCE,
    "case",
    {"case_id": "the case", "reopened_by": "the supervisor or admin who reopened it (never the reason)"},
    "a closed case is reopened",
)
CONTACT_RECORDED: Final = EventType(
    "cases.contact_recorded",
    CASES_SOURCE,
    "case",
    {"case_id": "the case", "contact_id": "the new contact", "contact_type": "its type (never its summary)"},
    "a contact is recorded on a case",
)
CONTACT_ATTACHMENT_UPLOADED: Final = EventType(
    "cases.contact_attachment_uploaded",
    CASES_SOURCE,
    "contact_attachment",
    {
        "attachment_id": "the attachment",
        "contact_id": "its contact",
        "case_id": "the contact's case",
        "file_size": "the file's size in bytes (never its name)",
    },
    "phase 1 of an upload commits the attachment's pending row",
)
CONTACT_ATTACHMENT_UPLOAD_FAILED: Final = EventType(
    "cases.contact_attachment_upload_failed",
    CASES_SOURCE,
    "contact_attachment",
    {
        "attachment_id": "the attachment",
        "contact_id": "its contact",
        "reason": "why, in Craig's own words or the error's type (never an arbitrary error's text)",
    },
    "an upload's blob was not stored (compensation), or the scanner found it missing or of another size",
)

# --- Foster homes and placements -------------------------------------------------------------------
_PLACEMENT: Final = {
    "placement_id": "the placement",
    "case_id": "its case",
    "foster_home_id": "its home, or null (a planned placement without one)",
    "status": "its status after the change",
}
FOSTER_HOME_CREATED: Final = EventType(
    "placements.foster_home_created",
    PLACEMENTS_SOURCE,
    "foster_home",
    {"foster_home_id": "the new home", "capacity": "how many children it takes"},
    "a foster home is registered",
)
FOSTER_HOME_UPDATED: Final = EventType(
    "placements.foster_home_updated",
    PLACEMENTS_SOURCE,
    "foster_home",
    {
        "foster_home_id": "the home",
        "fields": "the names of the fields that changed (name, capacity, status)",
        "capacity": "its capacity now",
        "status": "its status now (open or closed)",
        "updated_by": "the supervisor or admin who changed it",
    },
    "a foster home's name, capacity or status changes",
)
PLACEMENT_CREATED: Final = EventType(
    "placements.placement_created",
    PLACEMENTS_SOURCE,
    "placement",
    {**_PLACEMENT, "start_date": "its start date (ISO 8601)"},
    "a placement is created",
)
PLACEMENT_ACTIVATED: Final = EventType(
    "placements.placement_activated",
    PLACEMENTS_SOURCE,
    "placement",
    _PLACEMENT,
    "a placement becomes active (created active, or activated later)",
)
PLACEMENT_ENDED: Final = EventType(
    "placements.placement_ended",
    PLACEMENTS_SOURCE,
    "placement",
    {**_PLACEMENT, "end_reason": "why it ended"},
    "a placement ends",
)
PLACEMENT_CANCELLED: Final = EventType(
    "placements.placement_cancelled",
    PLACEMENTS_SOURCE,
    "placement",
    _PLACEMENT,
    "a placement is cancelled",
)
PLACEMENT_MOVED: Final = EventType(
    "placements.placement_moved",
    PLACEMENTS_SOURCE,
    "placement",
    {**_PLACEMENT, "from_foster_home_id": "the home it left, or null"},
    "a placement moves to another home",
)

# --- Partner exchange ---------------------------------------------------------------------------
_SEND_OUTCOME: Final = {
    "job_id": "the send job",
    "transaction_id": "its exchange transaction",
    "partner_id": "the partner it was sent to",
    "correlation_id": "the job's correlation id (the partner's X-Correlation-ID)",
    "attempts": "dispatches started, this one included",
    "status": "the job's status: sent or failed",
    "last_error": "why it failed (its first clause, never the partner's own words), or null when sent",
}
EXCHANGE_SENT: Final = EventType(
    "exchange.sent", EXCHANGE_SOURCE, "exchange_send_job", _SEND_OUTCOME, "a partner accepted a send job (2xx)"
)
EXCHANGE_SEND_FAILED: Final = EventType(
    "exchange.send_failed",
    EXCHANGE_SOURCE,
    "exchange_send_job",
    _SEND_OUTCOME,
    "a send job failed for good: a final answer, its last attempt, or no usable partner",
)

# --- Public intake and triage rule sets --------------------------------------------------------
REFERRAL_RECEIVED: Final = EventType(
    "intake.referral_received",
    INTAKE_SOURCE,
    "referral",
    {
        "referral_id": "the new referral",
        "reference": "the short reference the reporter is given",
        "priority": "the triage decision, or null when there is none",
        "triage_version": "the version of the rule set that decided it, or null",
        "received_at": "when it was received (ISO 8601)",
    },
    "a public referral is stored",
)
REFERRAL_SCREENED_IN: Final = EventType(
    "intake.referral_screened_in",
    INTAKE_SOURCE,
    "referral",
    {
        "referral_id": "the referral",
        "reference": "its short reference",
        "case_id": "the case opened for it",
        "screened_by": "the screener, supervisor or admin who screened it",
    },
    "a referral is screened in and a case opened for it",
)
REFERRAL_SCREENED_OUT: Final = EventType(
    "intake.referral_screened_out",
    INTAKE_SOURCE,
    "referral",
    {
        "referral_id": "the referral",
        "reference": "its short reference",
        "screened_by": "the screener, supervisor or admin who screened it (never the reason)",
    },
    "a referral is screened out",
)
RULES_CACHE_INVALIDATED: Final = EventType(
    "rules.cache_invalidated",
    RULES_SOURCE,
    "rule_set",
    {
        "instance_id": "the instance that created the version (it ignores its own event)",
        "name": "the rule set whose cached version every other instance evicts",
        "version": "the new version",
    },
    "a new version of a rule set is stored",
)

#: Every event type Craig stages, in the order README's table lists them.
CATALOGUE: Final[tuple[EventType, ...]] = (
    CASE_OPENED,
    CASE_ASSIGNED,
    CASE_UNASSIGNED,
    CASE_UPDATED,
    CASE_CLOSED,
    CASE_REOPENED,
    CONTACT_RECORDED,
    CONTACT_ATTACHMENT_UPLOADED,
    CONTACT_ATTACHMENT_UPLOAD_FAILED,
    FOSTER_HOME_CREATED,
    FOSTER_HOME_UPDATED,
    PLACEMENT_CREATED,
    PLACEMENT_ACTIVATED,
    PLACEMENT_ENDED,
    PLACEMENT_CANCELLED,
    PLACEMENT_MOVED,
    EXCHANGE_SENT,
    EXCHANGE_SEND_FAILED,
    REFERRAL_RECEIVED,
    REFERRAL_SCREENED_IN,
    REFERRAL_SCREENED_OUT,
    RULES_CACHE_INVALIDATED,
)
BY_NAME: Final[Mapping[str, EventType]] = MappingProxyType({event.name: event for event in CATALOGUE})
