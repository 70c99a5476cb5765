"""What :class:`StartTransaction` and :class:`GetTransaction` answer: a transaction and its jobs.

Each job carries its status, attempts, last error and next attempt, so a client follows the
delivery to every partner of the transaction from one read.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from craig.domain.exchange import SendJob
from craig.domain.exchange_transactions import ExchangeTransaction


@attrs.frozen
class TransactionView:
    transaction: ExchangeTransaction
    jobs: Sequence[SendJob]
