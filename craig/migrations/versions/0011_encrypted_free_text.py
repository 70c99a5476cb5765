"""Free text of cases, attachments and partner exchange is stored as ciphertext

The application now writes ``cases.title``, ``cases.family_name``, ``contact_attachments.file_name``
and ``.attachment_type``, the exchange payloads and the stored idempotent response bodies through
the field cipher. For the columns that change type or had a limit only plaintext could meet:

* ``exchange_transactions.payload`` and ``exchange_send_jobs.payload`` become TEXT. A row
  written before keeps its JSON as text (what ``jsonb::text`` gives), which the application
  reads as legacy plaintext until ``craig keys rotate`` encrypts it.
* ``cases.title`` loses its CHECK on the length: ciphertext is longer than the 300 characters
  the domain allows (``new_case`` checks the title itself).

Downgrade restores JSONB and the CHECK (``NOT VALID``, so rows holding ciphertext are not
re-checked). No value is lost: plaintext payloads become JSON again, and an encrypted payload is
kept as a JSON string holding its ciphertext (which upgrading again turns back into the
ciphertext). Ciphertext cannot be decrypted in SQL, so the code of revision 0010 cannot read the
values written encrypted (it shows them as they are stored).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

PAYLOADS = ("exchange_transactions", "exchange_send_jobs")


def upgrade() -> None:
    for table in PAYLOADS:
        op.execute(
            f"""
            ALTER TABLE {table} ALTER COLUMN payload TYPE TEXT USING (
                CASE WHEN jsonb_typeof(payload) = 'string' AND starts_with(payload #>> '{{}}', 'enc:')
                     THEN payload #>> '{{}}'
                     ELSE payload::text END)
            """
        )
    op.execute("ALTER TABLE cases DROP CONSTRAINT cases_title_check")


def downgrade() -> None:
    op.execute("ALTER TABLE cases ADD CONSTRAINT cases_title_check CHECK (length(title) BETWEEN 1 AND 300) NOT VALID")
    for table in PAYLOADS:
        op.execute(
            f"""
            ALTER TABLE {table} ALTER COLUMN payload TYPE JSONB USING (
                CASE WHEN starts_with(payload, 'enc:') THEN to_jsonb(payload) ELSE payload::jsonb END)
            """
        )
