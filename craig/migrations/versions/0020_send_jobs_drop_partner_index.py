"""Send jobs lose ``idx_exchange_send_jobs_partner``, an index no statement reads

No query of Craig's finds send jobs by partner: the worker claims through the drainable index,
reads and records by id, and lists a transaction's jobs through the transaction index. The index
only paid its way for deleting a partner (the foreign key's check), which Craig never does. Every
claim and every recorded outcome updates a job's indexed columns, so PostgreSQL writes a new entry
into each of the table's indexes on each of them: this one was paid for twice on every job sent.
A partner deleted by hand now checks its jobs with a scan of the table.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS idx_exchange_send_jobs_partner")


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS idx_exchange_send_jobs_partner ON exchange_send_jobs (partner_id)")
