"""Outbox: index the events that are backing off, so a claim skips what they hold back cheaply

A relay's claim leaves out every event with an older unpublished event of its aggregate that is
waiting out a publish backoff. That probe runs once per row the claim looks at; this partial
index holds only failed, unpublished events (a handful), so each probe is one small index
lookup however long the aggregate's backlog is.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE INDEX idx_event_outbox_backing_off
            ON event_outbox (aggregate_type, aggregate_id, seq)
         WHERE published_at IS NULL AND attempts > 0
        """
    )


def downgrade() -> None:
    op.execute("DROP INDEX idx_event_outbox_backing_off")
