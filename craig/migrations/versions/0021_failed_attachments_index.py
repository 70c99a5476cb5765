"""Attachments: a partial index of the ``failed`` rows, so ``craig status`` and the
``craig_attachments_failed`` gauge count them without reading the table

A row fails when the scanner finds its stored object of another size than the upload declared;
it is kept for an operator. There are few such rows and they must be seen: counting them on
every metrics refresh with a scan of every attachment would grow with the table.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_contact_attachments_failed ON contact_attachments (created_at) "
        "WHERE object_status = 'failed'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS idx_contact_attachments_failed")
