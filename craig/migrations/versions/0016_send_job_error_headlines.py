"""Send jobs keep no partner's words: cut ``last_error`` to its first clause

Craig used to store a failed attempt as ``partner answered 422: <the start of the partner's
body>``, and a partner may echo the payload back (a child's name). It now stores only where and
how an attempt failed (``partner answered 422 (client error)``); this cuts what older rows hold
to the part before the first colon, the same clause their ``exchange.send_failed`` events
carried. Nothing is restored on downgrade: the words are gone.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "UPDATE exchange_send_jobs SET last_error = btrim(split_part(last_error, ':', 1)) "
        "WHERE strpos(last_error, ':') > 0"
    )


def downgrade() -> None:
    pass
