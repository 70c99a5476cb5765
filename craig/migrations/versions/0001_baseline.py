"""Baseline: the idempotency, outbox and inbox tables in their first, legacy form.

Later revisions ALTER these tables (and backfill rows written before them), so the baseline
creates them first and the following revisions change them in place.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE idempotency_responses (
            cache_key        TEXT PRIMARY KEY,
            method           TEXT NOT NULL,
            path             TEXT NOT NULL,
            user_sub         UUID,
            body_fingerprint TEXT NOT NULL,
            status_code      INT NOT NULL,
            headers          JSONB NOT NULL,
            body             BYTEA,
            body_too_large   BOOLEAN NOT NULL DEFAULT false,
            created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX idx_idempotency_responses_created ON idempotency_responses (created_at)")
    op.execute(
        """
        CREATE TABLE event_outbox (
            id           UUID PRIMARY KEY,
            envelope     JSONB NOT NULL,
            created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
            published_at TIMESTAMPTZ,
            attempts     INT NOT NULL DEFAULT 0,
            last_error   TEXT
        )
        """
    )
    op.execute(
        """
        CREATE TABLE event_inbox (
            consumer     TEXT NOT NULL,
            event_id     UUID NOT NULL,
            received_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            processed_at TIMESTAMPTZ,
            PRIMARY KEY (consumer, event_id)
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE event_inbox")
    op.execute("DROP TABLE event_outbox")
    op.execute("DROP TABLE idempotency_responses")
