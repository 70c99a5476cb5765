"""Casework: the case lifecycle, the intake queue, foster-home status, versions for ETags

* ``cases``: ``status`` (open, closed), ``closed_at``, ``close_reason`` (ciphertext), the
  ``referral_id`` it was opened for (one case per referral), ``updated_at``, ``version``, and
  ``family_name_index``: the keyed blind index of the normalised family name. The application
  makes it (the key never reaches the database), so rows of earlier revisions have none until
  ``craig keys rotate`` indexes them.
* ``referrals``: ``status`` (new, screened_in, screened_out), ``priority_rank`` (0 urgent .. 4
  unscored, the queue's order), who screened it and when, ``decision_reason`` (ciphertext), the
  ``case_id`` it opened, ``version``; a partial index on the unscreened ones serves the queue
  and the metrics without reading screened history.
* ``foster_homes``: ``status`` (open, closed) and ``version``; ``placements``: ``version``.
* Keyset pagination indexes: every list's sort columns, then its id.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

INDEXES = {
    "cases_one_per_referral": "UNIQUE INDEX cases_one_per_referral ON cases (referral_id) WHERE referral_id IS NOT NULL",
    "idx_cases_opened_at": "INDEX idx_cases_opened_at ON cases (opened_at DESC, id DESC)",
    "idx_cases_updated_at": "INDEX idx_cases_updated_at ON cases (updated_at DESC, id DESC)",
    "idx_cases_family_name_index": "INDEX idx_cases_family_name_index ON cases (family_name_index)",
    "idx_referrals_unscreened": (
        "INDEX idx_referrals_unscreened ON referrals (priority_rank, received_at, id) WHERE status = 'new'"
    ),
    "idx_referrals_queue": "INDEX idx_referrals_queue ON referrals (status, priority_rank, received_at, id)",
    "idx_placements_case_history": "INDEX idx_placements_case_history ON placements (case_id, created_at DESC, id DESC)",
    "idx_placements_home_history": (
        "INDEX idx_placements_home_history ON placements (foster_home_id, created_at DESC, id DESC)"
    ),
    "idx_contacts_case_keyset": "INDEX idx_contacts_case_keyset ON contacts (case_id, occurred_at DESC, id DESC)",
}


def upgrade() -> None:
    op.execute(
        """
        ALTER TABLE cases
            ADD COLUMN status TEXT NOT NULL DEFAULT 'open',
            ADD COLUMN closed_at TIMESTAMPTZ,
            ADD COLUMN close_reason TEXT,
            ADD COLUMN referral_id UUID REFERENCES referrals(id),
            ADD COLUMN updated_at TIMESTAMPTZ,
            ADD COLUMN version INT NOT NULL DEFAULT 1,
            ADD COLUMN family_name_index TEXT
        """
    )
    op.execute("UPDATE cases SET updated_at = created_at")
    op.execute("ALTER TABLE cases ALTER COLUMN updated_at SET NOT NULL, ALTER COLUMN updated_at SET DEFAULT now()")
    op.execute("ALTER TABLE cases ADD CONSTRAINT cases_status_check CHECK (status IN ('open', 'closed'))")
    op.execute(
        "ALTER TABLE cases ADD CONSTRAINT cases_closed_has_time "
        "CHECK ((status = 'closed') = (closed_at IS NOT NULL AND close_reason IS NOT NULL))"
    )
    op.execute("ALTER TABLE cases ADD CONSTRAINT cases_version_check CHECK (version >= 1)")
    op.execute(
        """
        ALTER TABLE referrals
            ADD COLUMN status TEXT NOT NULL DEFAULT 'new',
            ADD COLUMN priority_rank SMALLINT NOT NULL DEFAULT 4,
            ADD COLUMN screened_at TIMESTAMPTZ,
            ADD COLUMN screened_by UUID,
            ADD COLUMN decision_reason TEXT,
            ADD COLUMN case_id UUID REFERENCES cases(id),
            ADD COLUMN version INT NOT NULL DEFAULT 1
        """
    )
    op.execute(
        """
        UPDATE referrals SET priority_rank = CASE priority
            WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 WHEN 'low' THEN 3 ELSE 4 END
        """
    )
    op.execute(
        "ALTER TABLE referrals ADD CONSTRAINT referrals_status_check "
        "CHECK (status IN ('new', 'screened_in', 'screened_out'))"
    )
    op.execute(
        "ALTER TABLE referrals ADD CONSTRAINT referrals_screened_has_time "
        "CHECK ((status = 'new') = (screened_at IS NULL AND screened_by IS NULL))"
    )
    op.execute(
        "ALTER TABLE referrals ADD CONSTRAINT referrals_screened_in_has_case "
        "CHECK ((status = 'screened_in') = (case_id IS NOT NULL))"
    )
    op.execute(
        "ALTER TABLE referrals ADD CONSTRAINT referrals_priority_rank_check CHECK (priority_rank BETWEEN 0 AND 4)"
    )
    op.execute(
        """
        ALTER TABLE foster_homes
            ADD COLUMN status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
            ADD COLUMN version INT NOT NULL DEFAULT 1
        """
    )
    op.execute("ALTER TABLE placements ADD COLUMN version INT NOT NULL DEFAULT 1")
    for definition in INDEXES.values():
        op.execute(f"CREATE {definition}")


def downgrade() -> None:
    for name in INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
    op.execute("ALTER TABLE placements DROP COLUMN version")
    op.execute("ALTER TABLE foster_homes DROP COLUMN version, DROP COLUMN status")
    op.execute(
        """
        ALTER TABLE referrals
            DROP COLUMN version, DROP COLUMN case_id, DROP COLUMN decision_reason, DROP COLUMN screened_by,
            DROP COLUMN screened_at, DROP COLUMN priority_rank, DROP COLUMN status
        """
    )
    op.execute(
        """
        ALTER TABLE cases
            DROP COLUMN family_name_index, DROP COLUMN version, DROP COLUMN updated_at, DROP COLUMN referral_id,
            DROP COLUMN close_reason, DROP COLUMN closed_at, DROP COLUMN status
        """
    )
