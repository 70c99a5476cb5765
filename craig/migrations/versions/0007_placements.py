"""Foster homes and placements

Revision ID: 0007
Revises: 0006

``foster_homes.occupancy`` counts the home's active placements; a CHECK keeps it in
``0..capacity`` whatever the application does. ``placements_one_active_per_case`` lets a case
have at most one active placement. Constraint names are part of the repository contract
(``craig.ports.placements``).
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE foster_homes (
            id         UUID PRIMARY KEY,
            name       TEXT NOT NULL CONSTRAINT foster_homes_name_length CHECK (length(name) BETWEEN 1 AND 200),
            capacity   INT NOT NULL CONSTRAINT foster_homes_capacity_positive CHECK (capacity >= 1),
            occupancy  INT NOT NULL DEFAULT 0,
            created_by UUID NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            CONSTRAINT foster_homes_occupancy_within_capacity CHECK (occupancy >= 0 AND occupancy <= capacity)
        )
        """
    )
    op.execute("CREATE INDEX idx_foster_homes_name ON foster_homes (name, id)")
    op.execute("CREATE INDEX idx_foster_homes_full ON foster_homes (name, id) WHERE occupancy >= capacity")
    op.execute(
        """
        CREATE TABLE placements (
            id             UUID PRIMARY KEY,
            case_id        UUID NOT NULL CONSTRAINT placements_case_id_fkey REFERENCES cases(id),
            foster_home_id UUID CONSTRAINT placements_foster_home_id_fkey REFERENCES foster_homes(id),
            status         TEXT NOT NULL CONSTRAINT placements_status_valid
                               CHECK (status IN ('planned', 'active', 'ended', 'cancelled')),
            start_date     DATE NOT NULL,
            end_reason     TEXT CONSTRAINT placements_end_reason_valid
                               CHECK (end_reason IN ('reunified', 'adopted', 'moved', 'disrupted', 'aged_out', 'other')),
            ended_at       TIMESTAMPTZ,
            created_by     UUID NOT NULL,
            created_at     TIMESTAMPTZ NOT NULL,
            updated_at     TIMESTAMPTZ NOT NULL,
            CONSTRAINT placements_ended_has_reason
                CHECK ((status = 'ended') = (end_reason IS NOT NULL)
                       AND (status = 'ended') = (ended_at IS NOT NULL)),
            CONSTRAINT placements_active_has_home CHECK (status <> 'active' OR foster_home_id IS NOT NULL)
        )
        """
    )
    op.execute("CREATE UNIQUE INDEX placements_one_active_per_case ON placements (case_id) WHERE status = 'active'")
    op.execute("CREATE INDEX idx_placements_case ON placements (case_id, created_at DESC)")
    # Serves the foreign key and the occupancy audit (active placements per home).
    op.execute("CREATE INDEX idx_placements_foster_home ON placements (foster_home_id, status)")


def downgrade() -> None:
    op.execute("DROP TABLE placements")
    op.execute("DROP TABLE foster_homes")
