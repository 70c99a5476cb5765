"""Public intake referrals, triage rule sets, default intake-triage

Referrals keep the reporter's and the child's personal details, the concern and the location
only as field-cipher output (``enc:v1:<key id>:...``): the columns are TEXT and never hold
plaintext unless ``encryption_mode=optional`` runs without a key. Rule sets are immutable
versions of a JSON document. The per-IP rate limit keeps one GCRA row per client.

The default ``intake-triage`` rule set (version 1) is seeded here; the document below is the
one described in the README and equal to ``craig.domain.intake.DEFAULT_TRIAGE_RULES`` (a
test checks; a migration keeps its own frozen copy). Its facts come from ``triage_facts``.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SYSTEM_USER = "00000000-0000-0000-0000-000000000000"


def _is(fact: str) -> dict[str, object]:
    return {"fact": fact, "op": "eq", "value": True}


# A copy of craig.domain.intake.DEFAULT_TRIAGE_RULES on purpose: a revision must seed what it
# seeded when it was written, whatever the domain's defaults become later.
DEFAULT_INTAKE_TRIAGE = [
    {"when": _is("mentions_immediate_danger"), "then": "urgent"},
    {
        "when": {
            "all": [
                {"fact": "child_age", "op": "lt", "value": 3},
                {"any": [_is("mentions_injury"), _is("mentions_neglect")]},
            ]
        },
        "then": "urgent",
    },
    {"when": {"any": [_is("mentions_sexual_abuse"), _is("mentions_injury")]}, "then": "high"},
    {
        "when": {
            "any": [
                _is("mentions_neglect"),
                _is("mentions_substance_use"),
                {"fact": "child_age", "op": "lt", "value": 6},
            ]
        },
        "then": "medium",
    },
    {"when": {"all": []}, "then": "low"},
]


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE rule_sets (
            name        TEXT NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,99}$'),
            version     INT NOT NULL CHECK (version >= 1),
            rules       JSONB NOT NULL CHECK (jsonb_typeof(rules) = 'array'),
            created_by  UUID NOT NULL,
            created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (name, version)
        )
        """
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO rule_sets (name, version, rules, created_by) VALUES ('intake-triage', 1, :rules, :created_by)"
        ).bindparams(sa.bindparam("rules", type_=JSONB)),
        {"rules": DEFAULT_INTAKE_TRIAGE, "created_by": SYSTEM_USER},
    )
    op.execute(
        """
        CREATE TABLE referrals (
            id              UUID PRIMARY KEY,
            reference       TEXT NOT NULL UNIQUE,
            reporter_name   TEXT NOT NULL,
            reporter_phone  TEXT,
            reporter_email  TEXT,
            child_details   TEXT NOT NULL,
            concern         TEXT NOT NULL,
            location        TEXT,
            priority        TEXT,
            triage_version  INT,
            matched_rule    INT,
            received_at     TIMESTAMPTZ NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX idx_referrals_received_at ON referrals (received_at DESC)")
    op.execute(
        "CREATE INDEX idx_referrals_priority ON referrals (priority, received_at DESC) WHERE priority IS NOT NULL"
    )
    op.execute(
        """
        CREATE TABLE intake_rate_limits (
            bucket  TEXT PRIMARY KEY,
            tat     TIMESTAMPTZ NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX idx_intake_rate_limits_tat ON intake_rate_limits (tat)")


def downgrade() -> None:
    op.execute("DROP TABLE intake_rate_limits")
    op.execute("DROP TABLE referrals")
    op.execute("DROP TABLE rule_sets")
