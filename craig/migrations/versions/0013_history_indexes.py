"""Partial indexes so that operator counts and retention purges never read a table whole

``craig status`` and ``/metrics`` count the failed send jobs and failed idempotency slots
through partial indexes of those states, in index order and with a limit, instead of grouping
the whole table. The cleanup worker purges delivered transactions oldest first through the index
on their creation time. (Sent jobs get no index of their own: every delivery would pay for it on
the worker's hot path; they are counted through the primary key.)

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

INDEXES = {
    "idx_exchange_transactions_created": "exchange_transactions (created_at)",
    "idx_exchange_send_jobs_failed": "exchange_send_jobs (completed_at) WHERE status = 'failed'",
    "idx_idempotency_responses_failed": "idempotency_responses (started_at) WHERE status = 'failed'",
}


def upgrade() -> None:
    for name, definition in INDEXES.items():
        op.execute(f"CREATE INDEX {name} ON {definition}")


def downgrade() -> None:
    for name in INDEXES:
        op.execute(f"DROP INDEX {name}")
