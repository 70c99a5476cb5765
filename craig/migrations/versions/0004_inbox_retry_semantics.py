"""Inbox retry semantics, plus what dead-lettering and replay need.

The error-tracking fields (``error_count``, ``last_error``, ``failed_at``,
``attempt_started_at``), then: the envelope itself and the queue it came from
(so dead letters can be listed and replayed, and the in-process bus of the embedded profile
can use the inbox as its durable queue), when it first failed (``x-first-failed-at``), and
when it is next due (retry backoff of the in-process bus).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE event_inbox
            ADD COLUMN error_count  INT NOT NULL DEFAULT 0,
            ADD COLUMN last_error   TEXT,
            ADD COLUMN failed_at    TIMESTAMPTZ,
            ADD COLUMN attempt_started_at TIMESTAMPTZ
        """
    )
    op.execute(
        """
        CREATE INDEX idx_event_inbox_in_flight
            ON event_inbox (received_at)
            WHERE processed_at IS NULL AND failed_at IS NULL
        """
    )
    op.execute(
        """
        ALTER TABLE event_inbox
            ADD COLUMN envelope        JSONB,
            ADD COLUMN queue           TEXT,
            ADD COLUMN first_failed_at TIMESTAMPTZ,
            ADD COLUMN next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now()
        """
    )
    op.execute(
        """
        CREATE INDEX idx_event_inbox_due
            ON event_inbox (consumer, next_attempt_at)
            WHERE processed_at IS NULL AND failed_at IS NULL
        """
    )
    op.execute("CREATE INDEX idx_event_inbox_failed ON event_inbox (failed_at) WHERE failed_at IS NOT NULL")
    op.execute("CREATE INDEX idx_event_inbox_processed ON event_inbox (processed_at) WHERE processed_at IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX idx_event_inbox_due")
    op.execute("DROP INDEX idx_event_inbox_processed")
    op.execute("DROP INDEX idx_event_inbox_failed")
    op.execute("DROP INDEX idx_event_inbox_in_flight")
    op.execute(
        """
        ALTER TABLE event_inbox
            DROP COLUMN next_attempt_at,
            DROP COLUMN first_failed_at,
            DROP COLUMN queue,
            DROP COLUMN envelope,
            DROP COLUMN attempt_started_at,
            DROP COLUMN failed_at,
            DROP COLUMN last_error,
            DROP COLUMN error_count
        """
    )
