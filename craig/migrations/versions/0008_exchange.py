"""Partner exchange: partners, transactions, send jobs, rate limits

* ``exchange_send_jobs`` holds one row per delivery of a transaction to a partner, with two
  columns for leases: ``lease_expires_at`` (set exactly while ``in_flight``) and ``lease_token``
  (a fencing token, +1 per claim). Ids and correlation ids come from the application (UUIDv7):
  PostgreSQL 15 has no ``uuidv7()``.
* ``partners.client_secret`` holds ciphertext written through the application's field cipher.
* ``exchange_rate_limits`` is the shared GCRA state: one row per partner, its theoretical
  arrival time, updated atomically by every worker process.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE partners (
            id             UUID PRIMARY KEY,
            name           TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
            base_url       TEXT NOT NULL,
            token_url      TEXT NOT NULL,
            client_id      TEXT NOT NULL,
            client_secret  TEXT NOT NULL,
            rate_limit_rpm INT CHECK (rate_limit_rpm BETWEEN 1 AND 1000000),
            send_path      TEXT NOT NULL,
            records_path   TEXT NOT NULL,
            created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE exchange_transactions (
            id         UUID PRIMARY KEY,
            payload    JSONB NOT NULL,
            created_by UUID NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        """
        CREATE TABLE exchange_send_jobs (
            id               UUID PRIMARY KEY,
            transaction_id   UUID NOT NULL REFERENCES exchange_transactions(id) ON DELETE CASCADE,
            partner_id       UUID NOT NULL REFERENCES partners(id),
            correlation_id   UUID NOT NULL,
            payload          JSONB NOT NULL,
            status           TEXT NOT NULL DEFAULT 'pending'
                             CHECK (status IN ('pending', 'in_flight', 'sent', 'failed')),
            attempts         INT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            last_error       TEXT,
            next_attempt_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
            completed_at     TIMESTAMPTZ,
            lease_expires_at TIMESTAMPTZ,
            lease_token      BIGINT NOT NULL DEFAULT 0,
            CHECK ((status = 'in_flight') = (lease_expires_at IS NOT NULL))
        )
        """
    )
    op.execute(
        """
        CREATE INDEX idx_exchange_send_jobs_drainable
            ON exchange_send_jobs (next_attempt_at)
            WHERE status = 'pending'
        """
    )
    op.execute("CREATE UNIQUE INDEX idx_exchange_send_jobs_correlation ON exchange_send_jobs (correlation_id)")
    op.execute(
        """
        CREATE INDEX idx_exchange_send_jobs_leased
            ON exchange_send_jobs (lease_expires_at)
            WHERE status = 'in_flight'
        """
    )
    op.execute("CREATE INDEX idx_exchange_send_jobs_transaction ON exchange_send_jobs (transaction_id, created_at)")
    op.execute("CREATE INDEX idx_exchange_send_jobs_partner ON exchange_send_jobs (partner_id)")
    op.execute(
        """
        CREATE TABLE exchange_rate_limits (
            key UUID PRIMARY KEY,
            tat TIMESTAMPTZ NOT NULL
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE exchange_rate_limits")
    op.execute("DROP TABLE exchange_send_jobs")
    op.execute("DROP TABLE exchange_transactions")
    op.execute("DROP TABLE partners")
