"""Attachment object_status

Existing rows (uploaded before the two-phase protocol, so their blobs were written first) are
backfilled as ``present``; the default is then dropped so every new row must say its status
(the upload writes ``pending``). The partial index serves the attachment scanner's "pending
rows older than grace" query.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE contact_attachments
            ADD COLUMN object_status TEXT NOT NULL DEFAULT 'present'
                CHECK (object_status IN ('pending', 'present', 'failed'))
        """
    )
    op.execute(
        """
        ALTER TABLE contact_attachments
            ALTER COLUMN object_status DROP DEFAULT
        """
    )
    op.execute(
        """
        CREATE INDEX idx_contact_attachments_pending
            ON contact_attachments (created_at)
            WHERE object_status = 'pending'
        """
    )


def downgrade() -> None:
    op.execute("DROP INDEX idx_contact_attachments_pending")
    op.execute("ALTER TABLE contact_attachments DROP COLUMN object_status")
