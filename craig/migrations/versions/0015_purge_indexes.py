"""Retention purges whose cost is bounded by their batch, not by the history they keep

* ``exchange_transactions.retention_from``: when a transaction's retention counts from, as far
  as the purge knows. NULL (its creation) until a purge pass finds it must stay; the pass then
  sets it to its last job's completion (all sent, not long enough ago) or to the pass's own time
  (a job failed, pending or in flight). The purge walks the index of
  ``coalesce(retention_from, created_at)``, so a transaction it keeps leaves the front of the
  walk and comes back once per retention period, instead of being read again by every pass. It
  replaces the index on ``created_at``, which only the purge used.
* Two partial indexes of the inbox rows under broadcast keys (``<consumer>@<instance>``), by key
  (byte order, so a key prefix is one range) and age: the broadcast purge reads the old rows of
  each broadcast consumer and never walks the dead letters (or undelivered rows) of the durable
  consumers, which are kept until an operator replays or purges them.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

INDEXES = {
    "idx_exchange_transactions_retention": "exchange_transactions ((coalesce(retention_from, created_at)))",
    "idx_event_inbox_broadcast_dead": (
        """event_inbox (consumer COLLATE "C", failed_at) WHERE failed_at IS NOT NULL AND strpos(consumer, '@') > 0"""
    ),
    "idx_event_inbox_broadcast_waiting": (
        """event_inbox (consumer COLLATE "C", received_at)
           WHERE processed_at IS NULL AND failed_at IS NULL AND strpos(consumer, '@') > 0"""
    ),
}


def upgrade() -> None:
    op.execute("ALTER TABLE exchange_transactions ADD COLUMN retention_from TIMESTAMPTZ")
    for name, definition in INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON {definition}")
    op.execute("DROP INDEX idx_exchange_transactions_created")


def downgrade() -> None:
    op.execute("CREATE INDEX idx_exchange_transactions_created ON exchange_transactions (created_at)")
    for name in INDEXES:
        op.execute(f"DROP INDEX {name}")
    op.execute("ALTER TABLE exchange_transactions DROP COLUMN retention_from")
