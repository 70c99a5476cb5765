"""Idempotency atomic claim, plus a fencing token.

Adds the claim-state machine to idempotency_responses. Additive: existing rows are
back-populated as 'succeeded' because the legacy code path only INSERTed on success.
``claim_token`` is the claim generation: every (re)claim bumps it, and a finalize applies only
while the token still matches, so an owner whose claim expired and was recovered cannot
overwrite the new owner's result.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE idempotency_responses
            ADD COLUMN status        TEXT NOT NULL DEFAULT 'succeeded'
                CHECK (status IN ('processing', 'succeeded', 'failed')),
            ADD COLUMN started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
            ADD COLUMN finished_at   TIMESTAMPTZ,
            ADD COLUMN claim_expires_at TIMESTAMPTZ NOT NULL
                DEFAULT (now() + INTERVAL '30 seconds'),
            ALTER COLUMN status_code   DROP NOT NULL,
            ALTER COLUMN headers       DROP NOT NULL,
            ALTER COLUMN body_fingerprint DROP NOT NULL
        """
    )
    op.execute(
        """
        CREATE INDEX idx_idempotency_responses_processing
            ON idempotency_responses (claim_expires_at)
            WHERE status = 'processing'
        """
    )
    op.execute("CREATE INDEX idx_idempotency_responses_started ON idempotency_responses (started_at)")
    op.execute(
        """
        ALTER TABLE idempotency_responses
            ADD COLUMN claim_token  BIGINT NOT NULL DEFAULT 1 CHECK (claim_token >= 1),
            ADD COLUMN error_detail TEXT
        """
    )


def downgrade() -> None:
    op.execute("DELETE FROM idempotency_responses WHERE status <> 'succeeded'")
    op.execute("DROP INDEX idx_idempotency_responses_processing")
    op.execute("DROP INDEX idx_idempotency_responses_started")
    op.execute(
        """
        ALTER TABLE idempotency_responses
            DROP COLUMN error_detail,
            DROP COLUMN claim_token,
            DROP COLUMN claim_expires_at,
            DROP COLUMN finished_at,
            DROP COLUMN started_at,
            DROP COLUMN status,
            ALTER COLUMN status_code SET NOT NULL,
            ALTER COLUMN headers SET NOT NULL,
            ALTER COLUMN body_fingerprint SET NOT NULL
        """
    )
