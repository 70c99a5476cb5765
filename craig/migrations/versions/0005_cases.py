"""Cases, contacts and contact attachments (attachments in their legacy form, before object_status)

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE cases (
            id          UUID PRIMARY KEY,
            title       TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 300),
            family_name TEXT,
            opened_at   TIMESTAMPTZ NOT NULL,
            created_by  UUID NOT NULL,
            created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX idx_cases_created_by ON cases (created_by, created_at DESC)")
    op.execute("CREATE INDEX idx_cases_created_at ON cases (created_at DESC, id DESC)")
    op.execute(
        """
        CREATE TABLE case_assignments (
            case_id     UUID NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
            worker_sub  UUID NOT NULL,
            assigned_by UUID NOT NULL,
            assigned_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (case_id, worker_sub)
        )
        """
    )
    op.execute("CREATE INDEX idx_case_assignments_worker ON case_assignments (worker_sub)")
    # contacts and contact_attachments
    # contacts.summary holds ciphertext (uow.cipher); contact_attachments is in its legacy
    # form: 0006 adds object_status.
    op.execute(
        """
        CREATE TABLE contacts (
            id           UUID PRIMARY KEY,
            case_id      UUID NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
            contact_type TEXT NOT NULL,
            occurred_at  TIMESTAMPTZ NOT NULL,
            summary      TEXT NOT NULL,
            created_by   UUID NOT NULL,
            worker_name  TEXT NOT NULL,
            created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX idx_contacts_case ON contacts (case_id, occurred_at DESC, id DESC)")
    op.execute(
        """
        CREATE TABLE contact_attachments (
            id              UUID PRIMARY KEY,
            contact_id      UUID NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
            attachment_type TEXT,
            file_name       TEXT NOT NULL,
            content_type    TEXT NOT NULL,
            file_size       BIGINT NOT NULL CHECK (file_size >= 0),
            object_key      TEXT NOT NULL UNIQUE,
            uploaded_by     UUID NOT NULL,
            worker_name     TEXT NOT NULL,
            created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX idx_contact_attachments_contact ON contact_attachments (contact_id, created_at, id)")


def downgrade() -> None:
    # contacts and contact_attachments
    op.execute("DROP TABLE contact_attachments")
    op.execute("DROP TABLE contacts")
    op.execute("DROP TABLE case_assignments")
    op.execute("DROP TABLE cases")
