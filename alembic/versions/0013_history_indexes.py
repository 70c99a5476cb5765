"""Partial indexes so that operator counts and retention purges never read a table whole

``craig status`` and ``/metrics`` count rows that pile up with history (sent and failed send
jobs, failed idempotency slots): each count walks a partial index of its state, in index order
and with a limit, instead of grouping the whole table. The cleanup worker purges sent send jobs
(with their transactions) oldest first through the same ``sent`` index.

Revision ID: 0013
Revises: 0010
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0010"
branch_labels = None
depends_on = None

INDEXES = {
    "idx_exchange_send_jobs_sent": "exchange_send_jobs (completed_at) WHERE status = 'sent'",
    "idx_exchange_send_jobs_failed": "exchange_send_jobs (completed_at) WHERE status = 'failed'",
    "idx_idempotency_responses_failed": "idempotency_responses (started_at) WHERE status = 'failed'",
}


def upgrade() -> None:
    for name, definition in INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON {definition}")


def downgrade() -> None:
    for name in INDEXES:
        op.execute(f"DROP INDEX {name}")
