"""Wake send-job workers on NOTIFY when jobs are enqueued

A statement-level trigger on ``exchange_send_jobs`` sends ``NOTIFY craig_send_jobs`` after every
INSERT, so an idle worker claims new jobs at once instead of at its next poll
(``POLL_INTERVAL``, 1 s, which stays as the fallback). One notification per statement, not per
row; PostgreSQL folds identical notifications of one transaction into one.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION craig_send_jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('craig_send_jobs', '');
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        """
        CREATE TRIGGER exchange_send_jobs_notify AFTER INSERT ON exchange_send_jobs
            FOR EACH STATEMENT EXECUTE FUNCTION craig_send_jobs_notify()
        """
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER exchange_send_jobs_notify ON exchange_send_jobs")
    op.execute("DROP FUNCTION craig_send_jobs_notify()")
