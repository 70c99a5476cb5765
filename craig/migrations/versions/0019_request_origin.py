"""Send jobs remember the request that made them: ``origin_request_id`` and ``traceparent``

* ``exchange_send_jobs.origin_request_id``: the ``X-Request-ID`` of the request that made the
  job, sent to the partner as ``X-Request-ID`` and bound to the send worker's log lines. It is
  not ``correlation_id``, which stays the job's own id (one per job, the partner's dedupe key).
* ``exchange_send_jobs.traceparent``: the W3C trace context the job was made in, sent to the
  partner as ``traceparent`` so the delivery continues the request's trace.

Both are NULL for jobs made before this revision (and for work no request started). Events
need no column: the outbox stores the envelope as JSON, with its ``traceparent``.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE exchange_send_jobs ADD COLUMN origin_request_id TEXT, ADD COLUMN traceparent TEXT")


def downgrade() -> None:
    op.execute("ALTER TABLE exchange_send_jobs DROP COLUMN traceparent, DROP COLUMN origin_request_id")
