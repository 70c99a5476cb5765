"""The audit trail: entries, their hash chain, purge records and the retention floor

All four tables are append-only in PostgreSQL itself. Triggers, enabled ALWAYS (so that
``session_replication_role = replica`` does not switch them off either), refuse for every role,
the owner and superusers included:

* UPDATE and TRUNCATE of any of them;
* DELETE of an entry whose ``at``, or a chain link whose ``sealed_at``, is younger than the
  retention floor; DELETE of a purge record or a floor at all;
* a retention floor shorter than the one in force.

The floor is a row of ``audit_retention`` (the newest one is in force, 2557 days = 7 years to
begin with). The application may raise it (an INSERT), never lower it: lowering takes DDL by the
tables' owner (``ALTER TABLE audit_retention DISABLE TRIGGER ...``), which leaves the lower row
in the table for everyone to see. ``at`` and ``sealed_at`` are stamped by triggers with the
database clock, so no client can backdate an entry into purgeable age.

An entry carries the id of the transaction that wrote it (``xid``); the sealer uses it to find
entries that commit late (see ``craig/adapters/postgres/audit_chain.py``). The chain is its own
table (seq, entry id, previous hash, hash), so sealing inserts and never updates an entry.

Downgrading drops the audit trail.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

TABLES = """
CREATE TABLE audit_entries (
    id uuid PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT now(),
    xid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    actor uuid,
    actor_role text,
    actor_name text,
    action text NOT NULL,
    resource_type text NOT NULL,
    resource_id text,
    resource_ids text[] NOT NULL DEFAULT '{}',
    case_id uuid,
    outcome text NOT NULL CHECK (outcome IN ('allowed', 'denied')),
    request_id text,
    client_ip text,
    changed_fields text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_entries_at ON audit_entries (at DESC, id DESC);
CREATE INDEX audit_entries_xid ON audit_entries (xid);
CREATE INDEX audit_entries_case ON audit_entries (case_id, at DESC, id DESC) WHERE case_id IS NOT NULL;
CREATE INDEX audit_entries_actor ON audit_entries (actor, at DESC, id DESC) WHERE actor IS NOT NULL;

CREATE TABLE audit_chain (
    seq bigint PRIMARY KEY CHECK (seq > 0),
    entry_id uuid NOT NULL UNIQUE,
    prev_hash bytea NOT NULL CHECK (length(prev_hash) = 32),
    hash bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    sealed_at timestamptz NOT NULL DEFAULT now(),
    watermark bigint NOT NULL
);

CREATE TABLE audit_purges (
    through_seq bigint PRIMARY KEY,
    anchor_hash bytea NOT NULL CHECK (length(anchor_hash) = 32),
    entries integer NOT NULL,
    purged_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_retention (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    retention interval NOT NULL CHECK (retention > interval '0'),
    set_at timestamptz NOT NULL DEFAULT now()
);
"""

FUNCTIONS = r"""
CREATE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE FUNCTION audit_retention_floor() RETURNS interval LANGUAGE sql STABLE AS $$
    SELECT retention FROM audit_retention ORDER BY id DESC LIMIT 1
$$;

CREATE FUNCTION audit_entries_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.at := now();
    NEW.xid := pg_current_xact_id()::text::bigint;
    RETURN NEW;
END $$;

CREATE FUNCTION audit_chain_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    prev audit_chain%ROWTYPE;
    purged audit_purges%ROWTYPE;
BEGIN
    NEW.sealed_at := now();
    SELECT * INTO prev FROM audit_chain WHERE seq = NEW.seq - 1;
    IF FOUND THEN
        IF NEW.prev_hash <> prev.hash THEN
            RAISE EXCEPTION 'audit chain: seq % does not follow seq %', NEW.seq, prev.seq
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    IF EXISTS (SELECT 1 FROM audit_chain) THEN
        RAISE EXCEPTION 'audit chain: seq % is not the next seq', NEW.seq
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    SELECT * INTO purged FROM audit_purges ORDER BY through_seq DESC LIMIT 1;
    IF FOUND AND (NEW.seq <> purged.through_seq + 1 OR NEW.prev_hash <> purged.anchor_hash) THEN
        RAISE EXCEPTION 'audit chain: seq % does not follow the last purged seq %', NEW.seq, purged.through_seq
            USING ERRCODE = 'integrity_constraint_violation';
    ELSIF NOT FOUND AND (NEW.seq <> 1 OR NEW.prev_hash <> sha256('craig audit chain'::bytea)) THEN
        RAISE EXCEPTION 'audit chain: the first link is seq 1 and follows the genesis hash'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION audit_entries_keep_young() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    young uuid;
BEGIN
    SELECT id INTO young FROM old_rows WHERE at > now() - audit_retention_floor() LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'audit entry % is younger than the retention floor (%): it cannot be deleted',
            young, audit_retention_floor() USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION audit_chain_keep_young() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    young bigint;
BEGIN
    SELECT seq INTO young FROM old_rows WHERE sealed_at > now() - audit_retention_floor() LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'audit chain seq % is younger than the retention floor (%): it cannot be deleted',
            young, audit_retention_floor() USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION audit_retention_only_longer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.set_at := now();
    IF NEW.retention < audit_retention_floor() THEN
        RAISE EXCEPTION 'the audit retention floor is % and cannot be lowered to %',
            audit_retention_floor(), NEW.retention USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
"""

#: (table, trigger, definition). Every one is enabled ALWAYS.
TRIGGERS = [
    ("audit_entries", "audit_entries_stamp", "BEFORE INSERT ON audit_entries FOR EACH ROW EXECUTE FUNCTION audit_entries_stamp()"),
    ("audit_entries", "audit_entries_no_update", "BEFORE UPDATE ON audit_entries FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_entries", "audit_entries_no_truncate", "BEFORE TRUNCATE ON audit_entries FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_entries", "audit_entries_keep_young", "AFTER DELETE ON audit_entries REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_keep_young()"),
    ("audit_chain", "audit_chain_check", "BEFORE INSERT ON audit_chain FOR EACH ROW EXECUTE FUNCTION audit_chain_check()"),
    ("audit_chain", "audit_chain_no_update", "BEFORE UPDATE ON audit_chain FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_chain", "audit_chain_no_truncate", "BEFORE TRUNCATE ON audit_chain FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_chain", "audit_chain_keep_young", "AFTER DELETE ON audit_chain REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_keep_young()"),
    ("audit_purges", "audit_purges_no_update", "BEFORE UPDATE OR DELETE ON audit_purges FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_purges", "audit_purges_no_truncate", "BEFORE TRUNCATE ON audit_purges FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_retention", "audit_retention_only_longer", "BEFORE INSERT ON audit_retention FOR EACH ROW EXECUTE FUNCTION audit_retention_only_longer()"),
    ("audit_retention", "audit_retention_no_update", "BEFORE UPDATE OR DELETE ON audit_retention FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
    ("audit_retention", "audit_retention_no_truncate", "BEFORE TRUNCATE ON audit_retention FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"),
]  # fmt: skip

FLOOR_DAYS = 2557  # AUDIT_RETENTION when this revision was written (a migration never changes)


def _statements(script: str, separator: str) -> list[str]:
    """asyncpg runs one statement per call: ``script`` split before each ``separator``."""
    parts = script.split(separator)
    return [
        part.strip() if n == 0 else separator.lstrip() + part.rstrip() for n, part in enumerate(parts) if part.strip()
    ]


def upgrade() -> None:
    for statement in _statements(TABLES, "\nCREATE "):
        op.execute(statement)
    for statement in _statements(FUNCTIONS, "\nCREATE FUNCTION "):
        op.execute(statement)
    for table, name, definition in TRIGGERS:
        op.execute(f"CREATE TRIGGER {name} {definition}")
        op.execute(f"ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name}")
    op.execute(f"INSERT INTO audit_retention (retention) VALUES (interval '{FLOOR_DAYS} days')")


def downgrade() -> None:
    op.execute("DROP TABLE audit_retention, audit_purges, audit_chain, audit_entries")
    for function in (
        "audit_retention_only_longer",
        "audit_chain_keep_young",
        "audit_entries_keep_young",
        "audit_chain_check",
        "audit_entries_stamp",
        "audit_retention_floor",
        "audit_refuse",
    ):
        op.execute(f"DROP FUNCTION {function}()")
