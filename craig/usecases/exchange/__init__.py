"""Partner exchange: partners, exchange transactions, the send-job worker's steps, and reads of
a partner's own API."""

from craig.usecases.exchange.dispatch_send_job import DEADLINE_PASSED, Dispatched, DispatchName, DispatchSendJob
from craig.usecases.exchange.get_transaction import GetTransaction, GetTransactionWork
from craig.usecases.exchange.give_back_send_jobs import GiveBackSendJobs, GiveBackSendJobsWork
from craig.usecases.exchange.list_partners import ListPartners, ListPartnersWork
from craig.usecases.exchange.outcome_events import outcome_event
from craig.usecases.exchange.partner_api import PartnerApi, fetch_page, fetch_page_or_empty
from craig.usecases.exchange.purge_delivered_transactions import (
    PurgeDeliveredTransactions,
    PurgeDeliveredTransactionsWork,
)
from craig.usecases.exchange.read_partner_records import ReadPartnerRecords, ReadPartnerRecordsWork
from craig.usecases.exchange.recover_send_jobs import RecoverExpiredSendJobs, RecoverExpiredSendJobsWork
from craig.usecases.exchange.register_partner import PartnerRegistration, RegisterPartner, RegisterPartnerWork
from craig.usecases.exchange.reserve_send_slot import ReserveSendSlot, ReserveSendSlotWork
from craig.usecases.exchange.retry_send_job import RetrySendJob, RetrySendJobWork
from craig.usecases.exchange.send_job_backlog import SendJobBacklog, SendJobBacklogWork
from craig.usecases.exchange.send_policy import Observer, SendPolicy
from craig.usecases.exchange.show_partner import PartnerOverview, ShowPartner, ShowPartnerWork
from craig.usecases.exchange.start_transaction import StartTransaction, StartTransactionWork
from craig.usecases.exchange.transaction_view import TransactionView

__all__ = [
    "DEADLINE_PASSED",
    "DispatchName",
    "DispatchSendJob",
    "Dispatched",
    "GetTransaction",
    "GetTransactionWork",
    "GiveBackSendJobs",
    "GiveBackSendJobsWork",
    "ListPartners",
    "ListPartnersWork",
    "Observer",
    "PartnerApi",
    "PartnerOverview",
    "PartnerRegistration",
    "PurgeDeliveredTransactions",
    "PurgeDeliveredTransactionsWork",
    "ReadPartnerRecords",
    "ReadPartnerRecordsWork",
    "RecoverExpiredSendJobs",
    "RecoverExpiredSendJobsWork",
    "RegisterPartner",
    "RegisterPartnerWork",
    "ReserveSendSlot",
    "ReserveSendSlotWork",
    "RetrySendJob",
    "RetrySendJobWork",
    "SendJobBacklog",
    "SendJobBacklogWork",
    "SendPolicy",
    "ShowPartner",
    "ShowPartnerWork",
    "StartTransaction",
    "StartTransactionWork",
    "TransactionView",
    "fetch_page",
    "fetch_page_or_empty",
    "outcome_event",
]
