"""Outbox relay: per-aggregate order, backoff, batch marking, NOTIFY on insert.

* ``seq`` gives a total staging order (``created_at`` ties within one transaction).
* ``aggregate_type``/``aggregate_id``/``event_type`` are copied out of the envelope so the relay
  can keep per-aggregate order without parsing JSON.
* ``next_attempt_at`` carries the capped exponential backoff after a failed publish.
* A statement-level trigger NOTIFYs ``craig_outbox`` so relays wake in milliseconds.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE event_outbox
            ADD COLUMN seq             BIGINT GENERATED ALWAYS AS IDENTITY,
            ADD COLUMN event_type      TEXT,
            ADD COLUMN aggregate_type  TEXT,
            ADD COLUMN aggregate_id    TEXT,
            ADD COLUMN next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now()
        """
    )
    op.execute(
        """
        UPDATE event_outbox
           SET event_type     = envelope->>'type',
               aggregate_type = coalesce(envelope->>'aggregate_type', 'unknown'),
               aggregate_id   = coalesce(envelope->>'aggregate_id', id::text)
        """
    )
    op.execute(
        """
        ALTER TABLE event_outbox
            ALTER COLUMN event_type SET NOT NULL,
            ALTER COLUMN aggregate_type SET NOT NULL,
            ALTER COLUMN aggregate_id SET NOT NULL
        """
    )
    op.execute("CREATE INDEX idx_event_outbox_pending ON event_outbox (seq) WHERE published_at IS NULL")
    op.execute(
        """
        CREATE INDEX idx_event_outbox_aggregate_pending
            ON event_outbox (aggregate_type, aggregate_id, seq) WHERE published_at IS NULL
        """
    )
    op.execute("CREATE INDEX idx_event_outbox_published ON event_outbox (published_at) WHERE published_at IS NOT NULL")
    op.execute(
        """
        CREATE FUNCTION craig_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('craig_outbox', '');
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        """
        CREATE TRIGGER event_outbox_notify AFTER INSERT ON event_outbox
            FOR EACH STATEMENT EXECUTE FUNCTION craig_outbox_notify()
        """
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER event_outbox_notify ON event_outbox")
    op.execute("DROP FUNCTION craig_outbox_notify()")
    op.execute("DROP INDEX idx_event_outbox_published")
    op.execute("DROP INDEX idx_event_outbox_aggregate_pending")
    op.execute("DROP INDEX idx_event_outbox_pending")
    op.execute(
        """
        ALTER TABLE event_outbox
            DROP COLUMN next_attempt_at,
            DROP COLUMN aggregate_id,
            DROP COLUMN aggregate_type,
            DROP COLUMN event_type,
            DROP COLUMN seq
        """
    )
