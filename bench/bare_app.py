"""The bare twin of Craig's routes for ``bench/api.py``: Litestar, asyncpg and PyJWT, nothing else.

Each route runs exactly the SQL statements Craig's route runs for the same request (found with
``python -m bench.craig_statements``), in the same transactions, on the same tables (so the same
triggers fire), then answers with JSON of the same shape. Authenticated routes verify the same
HS256 token with PyJWT. What it leaves out is Craig's own code between the statements: the
use cases and ports, the unit of work, SQLAlchemy, dependency injection, the problem documents,
request ids, metrics and tracing.

Simplifications, on purpose: field values are encrypted and decrypted with Craig's own
``FieldEncryptor`` (AES-256-GCM with the same key, the only Craig code used, so both do the same
crypto work); inputs are checked only as far as the statements need; no ETag, no cursor
signing (a plain base64 cursor), no problem documents. Its asyncpg pool holds up to 30
connections, as Craig's does (``CRAIG_DATABASE__POOL_SIZE`` 25 + ``__MAX_OVERFLOW`` 5), and
neither sends a statement to reset a connection given back.

Which scenarios also append an audit entry is given by ``BARE_AUDITED`` (comma-separated scenario
names): ``bench/api.py`` sets it to the scenarios for which it saw Craig write an entry, so the
twin follows the build it is compared with (an audited read commits; an unaudited one rolls
back, as Craig's does).

    BARE_DATABASE_URL=... BARE_JWT_SECRET=... BARE_FIELD_KEY=... python -m bench.bare_app --port 8001
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import asyncpg
import jwt
import uuid_utils
from litestar import Litestar, Request, Response, get, post
from litestar.exceptions import HTTPException, NotAuthorizedException, NotFoundException

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.ports.cipher import FieldContext

#: The scenarios whose Craig route records an audit entry (see the module's docstring).
SCENARIOS = ("open_case", "open_case_idempotent", "replay", "get_case", "list_cases", "record_contact")
CLAIM_TTL_SECONDS = 30.0
FAMILY_NAME_INDEX = "cases.family_name"


def new_id() -> uuid.UUID:
    return uuid.UUID(bytes=uuid_utils.uuid7().bytes)


class State:
    pool: asyncpg.Pool
    cipher: FieldEncryptor
    secret: str
    audited: frozenset[str]


STATE = State()

# --- the statements, as Craig's routes run them ---------------------------------------------------
INSERT_CASE = """INSERT INTO cases (id, title, family_name, family_name_index, opened_at, created_by, created_at,
 status, closed_at, close_reason, referral_id, updated_at, version)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"""
INSERT_EVENT = """WITH locked AS MATERIALIZED (
 SELECT pg_advisory_xact_lock(hashtextextended('craig.outbox:' || $1 || '/' || $2, 0)) )
 INSERT INTO event_outbox (id, envelope, event_type, aggregate_type, aggregate_id)
 SELECT $3, $4::JSONB, $5, $1, $2 FROM locked"""
INSERT_AUDIT = """INSERT INTO audit_entries (id, actor, actor_role, actor_name, action, resource_type, resource_id,
 resource_ids, case_id, outcome, request_id, client_ip, changed_fields)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING at"""
CASE_COLUMNS = """c.id, c.title, c.family_name, c.opened_at, c.created_by, c.created_at, c.status, c.closed_at,
 c.close_reason, c.referral_id, c.updated_at, c.version,
 coalesce((SELECT array_agg(a.worker_sub) FROM case_assignments a WHERE a.case_id = c.id), '{}') AS workers"""
SELECT_CASE = f"SELECT {CASE_COLUMNS} FROM cases c WHERE c.id = $1"
SELECT_CASE_FOR_SHARE = f"{SELECT_CASE} FOR SHARE OF c"
LIST_CASES = f"""SELECT {CASE_COLUMNS} FROM cases c
 WHERE ($1 OR ($2 AND c.created_by = $3) OR EXISTS (SELECT 1 FROM case_assignments a
 WHERE a.case_id = c.id AND a.worker_sub = $3))
 ORDER BY c.opened_at DESC, c.id DESC LIMIT $4"""
INSERT_CONTACT = """INSERT INTO contacts (id, case_id, contact_type, occurred_at, summary, created_by, worker_name,
 created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"""
SLOT_COLUMNS = """cache_key, method, path, user_sub, body_fingerprint, status, claim_token, slot_id, started_at,
 claim_expires_at, finished_at, status_code, headers, body, body_too_large, error_detail"""
CLAIM = f"""WITH inserted AS (
 INSERT INTO idempotency_responses (cache_key, method, path, user_sub, body_fingerprint, status, slot_id,
 started_at, claim_expires_at) VALUES ($1, $2, $3, $4, $5, 'processing', $6, now(), now() + make_interval(secs => $7))
 ON CONFLICT (cache_key) DO NOTHING RETURNING {SLOT_COLUMNS}
), reclaimed AS (
 UPDATE idempotency_responses SET status = 'processing', started_at = now(),
 claim_expires_at = now() + make_interval(secs => $7), finished_at = NULL, status_code = NULL, headers = NULL,
 body = NULL, body_too_large = false, error_detail = NULL, body_fingerprint = $5, claim_token = claim_token + 1
 WHERE cache_key = $1 AND body_fingerprint = $5
 AND (status = 'failed' OR (status = 'processing' AND claim_expires_at <= now()))
 AND NOT EXISTS (SELECT 1 FROM inserted) RETURNING {SLOT_COLUMNS}
)
SELECT {SLOT_COLUMNS}, now() AS db_now, true AS claimed FROM inserted
UNION ALL SELECT {SLOT_COLUMNS}, now(), true FROM reclaimed
UNION ALL SELECT {SLOT_COLUMNS}, now(), false FROM idempotency_responses
 WHERE cache_key = $1 AND NOT EXISTS (SELECT 1 FROM inserted) AND NOT EXISTS (SELECT 1 FROM reclaimed)"""
FINALIZE = """WITH done AS (UPDATE idempotency_responses SET status = 'succeeded', finished_at = now(),
 status_code = $1, headers = $2::JSONB, body = $3::BYTEA, body_too_large = $4
 WHERE cache_key = $5 AND claim_token = $6 AND status = 'processing' RETURNING cache_key)
 SELECT pg_notify('craig_idempotency', cache_key) FROM done"""


# --- helpers ------------------------------------------------------------------------------------
def principal(request: Request[Any, Any, Any]) -> dict[str, Any]:
    header = request.headers.get("authorization", "")
    if not header.startswith("Bearer "):
        raise NotAuthorizedException("missing bearer token")
    try:
        claims: dict[str, Any] = jwt.decode(
            header[7:],
            STATE.secret,
            algorithms=["HS256"],
            audience="craig-api",
            issuer="craig",
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.InvalidTokenError as error:
        raise NotAuthorizedException(str(error)) from None
    claims["sub"] = uuid.UUID(str(claims["sub"]))
    return claims


def context(table: str, column: str, row_id: object) -> FieldContext:
    return FieldContext(table, column, str(row_id))


def case_view(row: Mapping[str, Any]) -> dict[str, Any]:
    def opened(column: str) -> str | None:
        stored = row[column]
        return None if stored is None else STATE.cipher.decrypt(stored, context("cases", column, row["id"]))

    return {
        "id": str(row["id"]),
        "title": opened("title"),
        "family_name": opened("family_name"),
        "opened_at": row["opened_at"].isoformat(),
        "created_by": str(row["created_by"]),
        "created_at": row["created_at"].isoformat(),
        "assigned_workers": sorted(str(w) for w in row["workers"]),
        "status": row["status"],
        "closed_at": None if row["closed_at"] is None else row["closed_at"].isoformat(),
        "close_reason": opened("close_reason"),
        "referral_id": None if row["referral_id"] is None else str(row["referral_id"]),
        "updated_at": row["updated_at"].isoformat(),
        "version": row["version"],
    }


def visible(row: Mapping[str, Any] | None, who: dict[str, Any]) -> bool:
    if row is None:
        return False
    return who.get("role") in ("supervisor", "admin") or row["created_by"] == who["sub"] or who["sub"] in row["workers"]


async def audit(
    conn: asyncpg.Connection,
    who: dict[str, Any] | None,
    action: str,
    resource_type: str,
    resource_id: object,
    *,
    case_id: uuid.UUID | None = None,
    resource_ids: list[str] | None = None,
) -> None:
    await conn.fetchval(
        INSERT_AUDIT,
        new_id(),
        None if who is None else str(who["sub"]),
        "anonymous" if who is None else who.get("role"),
        None if who is None else who.get("name"),
        action,
        resource_type,
        None if resource_id is None else str(resource_id),
        resource_ids or [],
        case_id,
        "allowed",
        uuid.uuid4().hex,
        "127.0.0.1",
        [],
    )


async def stage_event(
    conn: asyncpg.Connection, event_type: str, aggregate_id: uuid.UUID, payload: dict[str, Any]
) -> None:
    event_id = new_id()
    envelope = {
        "id": str(event_id),
        "source": "craig",
        "type": event_type,
        "occurred_at": datetime.now(UTC).isoformat(),
        "payload": payload,
        "aggregate_type": "case",
        "aggregate_id": str(aggregate_id),
        "correlation_id": None,
        "causation_id": None,
    }
    await conn.execute(INSERT_EVENT, "case", str(aggregate_id), event_id, json.dumps(envelope), event_type)


async def insert_case(conn: asyncpg.Connection, who: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    case_id = new_id()
    now = datetime.now(UTC)
    family = body.get("family_name")
    index = None if family is None else STATE.cipher.blind_index(FAMILY_NAME_INDEX, " ".join(family.lower().split()))
    title = STATE.cipher.encrypt(body["title"], context("cases", "title", case_id))
    sealed_family = None if family is None else STATE.cipher.encrypt(family, context("cases", "family_name", case_id))
    await conn.execute(
        INSERT_CASE, case_id, title, sealed_family, index, now, who["sub"], now, "open", None, None, None, now, 1
    )
    await stage_event(conn, "cases.case_opened", case_id, {"case_id": str(case_id), "opened_by": str(who["sub"])})
    return {
        "id": str(case_id),
        "title": body["title"],
        "family_name": family,
        "opened_at": now.isoformat(),
        "created_by": str(who["sub"]),
        "created_at": now.isoformat(),
        "assigned_workers": [],
        "status": "open",
        "closed_at": None,
        "close_reason": None,
        "referral_id": None,
        "updated_at": now.isoformat(),
        "version": 1,
    }


# --- routes -------------------------------------------------------------------------------------
@get("/v1/me")
async def me(request: Request[Any, Any, Any]) -> dict[str, Any]:
    who = principal(request)
    return {"sub": str(who["sub"]), "name": who.get("name"), "role": who.get("role")}


@post("/v1/cases", status_code=201)
async def open_case(request: Request[Any, Any, Any]) -> Response[Any]:
    who = principal(request)
    raw = await request.body()
    body = json.loads(raw)
    key = request.headers.get("idempotency-key")
    if key is None:
        async with STATE.pool.acquire() as conn, conn.transaction():
            view = await insert_case(conn, who, body)
            if "open_case" in STATE.audited:
                await audit(conn, who, "create", "case", view["id"], case_id=uuid.UUID(view["id"]))
        return Response(view, status_code=201)
    return await idempotent_open(who, key, body)


async def idempotent_open(who: dict[str, Any], key: str, body: dict[str, Any]) -> Response[Any]:
    cache_key = hashlib.sha256(f"{who['sub']}\x00POST\x00/v1/cases\x00{key}".encode()).hexdigest()
    fingerprint = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    async with STATE.pool.acquire() as conn:
        slot = None
        while slot is None:  # no row: a first claim committed after this statement began; ask again
            slot = await conn.fetchrow(
                CLAIM, cache_key, "POST", "/v1/cases", str(who["sub"]), fingerprint, new_id(), CLAIM_TTL_SECONDS
            )
        if not slot["claimed"]:  # a stored answer: replay it
            existing = slot
            assert existing["status"] == "succeeded"
            if "replay" in STATE.audited:
                await audit(conn, who, "replay", "request", "POST /v1/cases")
            stored = STATE.cipher.decrypt_bytes(
                bytes(existing["body"]), context("idempotency_responses", "body", cache_key)
            )
            headers = json.loads(existing["headers"])
            return Response(
                stored,
                status_code=existing["status_code"],
                media_type="application/json",
                headers={**headers, "Idempotent-Replayed": "true"},
            )
        async with conn.transaction():
            savepoint = conn.transaction()
            await savepoint.start()
            view = await insert_case(conn, who, body)
            if "open_case_idempotent" in STATE.audited:
                await audit(conn, who, "create", "case", view["id"], case_id=uuid.UUID(view["id"]))
            await savepoint.commit()
            answer = json.dumps(view).encode()
            sealed = STATE.cipher.encrypt_bytes(answer, context("idempotency_responses", "body", cache_key))
            headers = json.dumps({"location": f"/v1/cases/{view['id']}"})
            await conn.fetchval(FINALIZE, 201, headers, sealed, False, cache_key, slot["claim_token"])
    return Response(view, status_code=201)


@get("/v1/cases/{case_id:uuid}")
async def get_case(request: Request[Any, Any, Any], case_id: uuid.UUID) -> dict[str, Any]:
    who = principal(request)
    audited = "get_case" in STATE.audited
    async with STATE.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        try:
            row = await conn.fetchrow(SELECT_CASE, case_id)
            if not visible(row, who):
                raise NotFoundException("case not found")
            if audited:
                await audit(conn, who, "read", "case", case_id, case_id=case_id)
        except BaseException:
            await transaction.rollback()
            raise
        if audited:
            await transaction.commit()
        else:
            await transaction.rollback()
    assert row is not None
    return case_view(row)


@get("/v1/cases")
async def list_cases(request: Request[Any, Any, Any], limit: int = 20) -> dict[str, Any]:
    who = principal(request)
    audited = "list_cases" in STATE.audited
    everyone = who.get("role") in ("supervisor", "admin")
    async with STATE.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        try:
            rows = await conn.fetch(LIST_CASES, everyone, who.get("role") == "caseworker", who["sub"], limit + 1)
            if audited:
                ids = [str(row["id"]) for row in rows[:limit]]
                await audit(conn, who, "list", "case", None, resource_ids=ids)
        except BaseException:
            await transaction.rollback()
            raise
        if audited:
            await transaction.commit()
        else:
            await transaction.rollback()
    items = [case_view(row) for row in rows[:limit]]
    cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        cursor = base64.urlsafe_b64encode(f"{last['opened_at'].isoformat()}|{last['id']}".encode()).decode()
    return {"items": items, "next_cursor": cursor}


@post("/v1/cases/{case_id:uuid}/contacts", status_code=201)
async def record_contact(request: Request[Any, Any, Any], case_id: uuid.UUID) -> dict[str, Any]:
    who = principal(request)
    body = json.loads(await request.body())
    occurred_at = datetime.fromisoformat(body["occurred_at"])
    contact_id = new_id()
    now = datetime.now(UTC)
    async with STATE.pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(SELECT_CASE_FOR_SHARE, case_id)
        if not visible(row, who):
            raise NotFoundException("case not found")
        assert row is not None
        if row["status"] != "open":
            raise HTTPException(status_code=409, detail="case closed")
        summary = STATE.cipher.encrypt(body["summary"], context("contacts", "summary", contact_id))
        await conn.execute(
            INSERT_CONTACT,
            contact_id,
            case_id,
            body["contact_type"],
            occurred_at,
            summary,
            who["sub"],
            who.get("name"),
            now,
        )
        await stage_event(
            conn, "cases.contact_recorded", case_id, {"case_id": str(case_id), "contact_id": str(contact_id)}
        )
        if "record_contact" in STATE.audited:
            await audit(conn, who, "create", "contact", contact_id, case_id=case_id)
    return {
        "id": str(contact_id),
        "case_id": str(case_id),
        "contact_type": body["contact_type"],
        "occurred_at": occurred_at.isoformat(),
        "summary": body["summary"],
        "created_by": str(who["sub"]),
        "worker_name": who.get("name"),
        "created_at": now.isoformat(),
    }


@get("/health/ready")
async def ready() -> dict[str, str]:
    async with STATE.pool.acquire() as conn:
        await conn.fetchval("SELECT 1")
    return {"status": "ready"}


async def keep_as_is(_conn: asyncpg.Connection) -> None:
    return None


@asynccontextmanager
async def lifespan(_app: Litestar) -> AsyncIterator[None]:
    # As Craig's pool: at most 30 connections, the same statement timeout, and no statement to
    # reset a connection given back (asyncpg's default sends one; Craig's pool does not).
    STATE.pool = await asyncpg.create_pool(
        os.environ["BARE_DATABASE_URL"],
        min_size=10,
        max_size=30,
        server_settings={"statement_timeout": "30000"},
        reset=keep_as_is,
    )
    try:
        yield
    finally:
        await STATE.pool.close()


def create_app() -> Litestar:
    STATE.cipher = FieldEncryptor.from_setting(os.environ["BARE_FIELD_KEY"])
    STATE.secret = os.environ["BARE_JWT_SECRET"]
    STATE.audited = frozenset(name for name in os.environ.get("BARE_AUDITED", "").split(",") if name)
    return Litestar(
        [me, open_case, get_case, list_cases, record_contact, ready], lifespan=[lifespan], openapi_config=None
    )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default 1)")
    parser.add_argument("--loop", default="auto", help="uvicorn's loop (auto: uvloop when installed)")
    parser.add_argument("--http", default="auto", help="uvicorn's HTTP parser (auto: httptools when installed)")
    args = parser.parse_args()
    # The settings `craig serve` gives uvicorn.
    uvicorn.run(
        "bench.bare_app:create_app" if args.workers > 1 else create_app(),
        factory=args.workers > 1,
        workers=args.workers if args.workers > 1 else None,
        host="127.0.0.1",
        port=args.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        loop=args.loop,
        http=args.http,
    )


if __name__ == "__main__":
    main()
