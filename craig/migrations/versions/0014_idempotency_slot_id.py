"""Give every idempotency slot an identity of its own: ``slot_id``

``cache_key`` is derived from (user, method, path, Idempotency-Key), so it names the same row
again when a key is reused after its slot was purged. ``slot_id`` is set when the row is
INSERTed and kept by every re-claim (after a failure, or of a dead owner's claim), so it names
one slot from its first claim to its purge: handlers derive the ids of what they create from it.
Existing rows get a random one.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE idempotency_responses ADD COLUMN slot_id UUID")
    op.execute("UPDATE idempotency_responses SET slot_id = gen_random_uuid()")
    op.execute("ALTER TABLE idempotency_responses ALTER COLUMN slot_id SET NOT NULL")


def downgrade() -> None:
    op.execute("ALTER TABLE idempotency_responses DROP COLUMN slot_id")
