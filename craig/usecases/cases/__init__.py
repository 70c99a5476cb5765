"""Cases and their contacts: open, read, list and assign cases; record, read and list contacts."""

from craig.usecases.cases.assign_worker import AssignWorker, AssignWorkerWork
from craig.usecases.cases.get_case import GetCase, GetCaseWork
from craig.usecases.cases.get_contact import GetContact, GetContactWork
from craig.usecases.cases.list_cases import ListCases, ListCasesWork
from craig.usecases.cases.list_contacts import ListContacts, ListContactsWork
from craig.usecases.cases.open_case import OpenCase, OpenCaseWork
from craig.usecases.cases.record_contact import RecordContact, RecordContactWork
from craig.usecases.cases.visibility import visible_case, visible_contact

__all__ = [
    "AssignWorker",
    "AssignWorkerWork",
    "GetCase",
    "GetCaseWork",
    "GetContact",
    "GetContactWork",
    "ListCases",
    "ListCasesWork",
    "ListContacts",
    "ListContactsWork",
    "OpenCase",
    "OpenCaseWork",
    "RecordContact",
    "RecordContactWork",
    "visible_case",
    "visible_contact",
]
