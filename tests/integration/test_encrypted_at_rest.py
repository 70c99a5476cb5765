"""Field encryption on real PostgreSQL: no free-text personal data in clear in any column of any
table, ciphertext bound to its row, and ``craig keys rotate`` upgrading what older code left."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import attrs
import httpx
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from craig.adapters.crypto.aesgcm import NONCE_BYTES, FieldEncryptor
from craig.adapters.postgres.database import libpq_dsn
from craig.adapters.postgres.encrypted_columns import ENCRYPTED_COLUMNS
from craig.domain.access import Role
from craig.entrypoints.cli import keys
from craig.entrypoints.container import Container
from craig.entrypoints.workers.messaging import relay_loop
from craig.entrypoints.workers.runner import workers_running
from craig.entrypoints.workers.send_jobs import send_job_scheduler
from craig.ports.key_rotation import EncryptedColumn
from tests.support import apps
from tests.support.apps import auth, serving
from tests.support.ciphers import FIELD_KEY
from tests.support.fake_partner import CLIENT_SECRET, FakePartner, registration, serving_partner
from tests.support.files import png_bytes
from tests.support.problems import problem_code

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

MARK = f"zq{uuid.uuid4().hex[:10]}mark"  # lower case, so it also fits an e-mail address
PHONE = "+44 161 496 7315"
#: Everything a request carries that must never be found in clear.
NEEDLES = (MARK, PHONE, CLIENT_SECRET)

#: Free text that may stay in clear, and why. The test writes the marker into each of them too and
#: requires the scan to find it there (and nowhere else), so the scan is shown to see plaintext.
EXCLUDED = {
    ("partners", "name"): "a partner agency's name: configuration an admin registers, not personal data",
    ("rule_sets", "rules"): "a triage rule set document: configuration (its values are thresholds and categories)",
    ("foster_homes", "name"): "a foster home's directory name, registered by supervisors, listed and ordered by it",
    (
        "contacts",
        "worker_name",
    ): "the case worker's own name from the identity token (who recorded it), no request field",
    ("contact_attachments", "worker_name"): "the uploader's own name from the identity token, no request field",
    ("audit_entries", "actor_name"): "who acted, the actor's own name from the identity token, no request field",
}


@attrs.define
class Api:
    container: Container
    client: httpx.AsyncClient
    fake: FakePartner
    fake_base: str
    worker: dict[str, str]
    supervisor: dict[str, str]
    admin: dict[str, str]

    async def post(self, path: str, headers: dict[str, str], **kw: Any) -> dict[str, Any]:
        """POST with a fresh Idempotency-Key, so the stored response exists too."""
        response = await self.client.post(path, headers={**headers, "Idempotency-Key": uuid.uuid4().hex}, **kw)
        assert response.status_code in (200, 201, 202), response.text
        return response.json()  # type: ignore[no-any-return]


@pytest.fixture
async def api(tmp_path: Path, pg_url: str) -> AsyncIterator[Api]:
    async with serving_partner() as (fake, base), serving("postgres", tmp_path, pg_url) as (container, client):
        try:
            yield Api(
                container,
                client,
                fake,
                base,
                auth(container, role=Role.CASEWORKER, name=f"Ann {MARK}"),
                auth(container, role=Role.SUPERVISOR, name="Sue"),
                auth(container, role=Role.ADMIN, name="Ada"),
            )
        finally:
            await container.partner_gateway().aclose()


async def every_cell(pg_url: str) -> dict[tuple[str, str], list[str]]:
    """Every value of every column of every table, read raw: cast to text (jsonb as its JSON,
    arrays and the rest as PostgreSQL prints them), bytea as its bytes decoded."""
    conn = await asyncpg.connect(libpq_dsn(pg_url))
    try:
        columns = await conn.fetch(
            """
            SELECT c.table_name, c.column_name, c.data_type
              FROM information_schema.columns c
              JOIN information_schema.tables t USING (table_schema, table_name)
             WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
             ORDER BY c.table_name, c.ordinal_position
            """
        )
        cells: dict[tuple[str, str], list[str]] = {}
        for table, column, data_type in columns:
            expression = f'"{column}"' if data_type == "bytea" else f'CAST("{column}" AS text)'
            values = await conn.fetch(f'SELECT {expression} AS v FROM "{table}"')
            cells[(table, column)] = [
                bytes(row["v"]).decode("utf-8", "replace") if data_type == "bytea" else row["v"]
                for row in values
                if row["v"] is not None
            ]
        return cells
    finally:
        await conn.close()


def found_in(cells: dict[tuple[str, str], list[str]]) -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = {}
    for cell, values in cells.items():
        hits = {needle for needle in NEEDLES if any(needle in value for value in values)}
        if hits:
            found[cell] = hits
    return found


async def test_no_free_text_of_any_route_is_stored_in_clear(api: Api, pg_url: str) -> None:
    # Cases and contacts.
    case = await api.post("/v1/cases", api.worker, json={"title": f"{MARK} title", "family_name": f"{MARK} Doe"})
    await api.post(f"/v1/cases/{case['id']}/assignments", api.supervisor, json={"worker_sub": str(uuid.uuid4())})
    contact_body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": f"{MARK} seen"}
    contact = await api.post(f"/v1/cases/{case['id']}/contacts", api.worker, json=contact_body)
    # Attachments: the file name and the one text field of the upload form.
    attachments = f"/v1/cases/{case['id']}/contacts/{contact['id']}/attachments"
    attachment = await api.post(
        attachments,
        api.worker,
        files={"file": (f"{MARK} bruise photo.png", png_bytes(), "image/png")},
        data={"attachment_type": f"{MARK} photo"},
    )
    assert attachment["file_name"] == f"{MARK} bruise photo.png"
    assert MARK not in attachment["id"]
    # Public intake: every field of the referral form.
    referral = {
        "reporter": {"name": f"{MARK} reporter", "phone": PHONE, "email": f"{MARK}@example.org"},
        "child": {"first_name": f"{MARK} child", "age": 4},
        "concern": f"{MARK} concern",
        "location": f"{MARK} lane",
    }
    await api.post("/intake/referrals", {}, json=referral)
    # Placements: a foster home (its name is excluded above) and a placement, which has no free text.
    home = await api.post("/v1/foster-homes", api.supervisor, json={"name": f"{MARK} house", "capacity": 2})
    placement = {"case_id": case["id"], "status": "planned", "start_date": "2026-02-01", "foster_home_id": home["id"]}
    await api.post("/v1/placements", api.worker, json=placement)
    # Rule sets: a document (excluded) and an evaluation of facts.
    rule = {"when": {"fact": "region", "op": "in", "value": [MARK]}, "then": "high"}
    await api.post("/v1/rule-sets", api.supervisor, json={"name": "regions", "rules": [rule]})
    await api.post("/v1/rule-sets/regions/evaluate", api.supervisor, json={"facts": {"region": MARK}})
    # Partner exchange: a partner (its name is excluded, its secret is not) and a transaction.
    partner = await api.post(
        "/v1/exchange/partners", api.admin, json=registration(api.fake_base, f"{MARK} agency", rate_limit_rpm=6000)
    )
    payload = {"child": {"name": f"{MARK} child"}, "note": f"{MARK} moved", "phone": PHONE}
    await api.post("/v1/exchange/transactions", api.worker, json={"partner_ids": [partner["id"]], "payload": payload})

    # The send worker decrypts the payload for the partner; the relay publishes every event to
    # the in-process bus, whose consumers record theirs in the inbox.
    worker = send_job_scheduler(api.container)
    try:
        await worker.drain()
    finally:
        await worker.aclose()
    assert len(api.fake.bodies) == 1 and MARK in api.fake.bodies[0].decode() and PHONE in api.fake.bodies[0].decode()
    async with workers_running(api.container, [relay_loop(api.container)]):
        for _ in range(600):
            if (await api.container.outbox_relay_store().stats()).pending == 0:
                break
            await asyncio.sleep(0.05)
    assert (await api.container.outbox_relay_store().stats()).pending == 0

    cells = await every_cell(pg_url)
    stored = {cell: values for cell, values in cells.items() if values}
    for table in ("idempotency_responses", "event_outbox", "event_inbox", "exchange_send_jobs", "referrals"):
        assert any(cell[0] == table for cell in stored), f"{table} holds nothing: the scan would prove nothing"
    assert len(cells[("idempotency_responses", "body")]) >= 11  # one stored response per POST above
    found = found_in(cells)
    leaks = {cell: hits for cell, hits in found.items() if cell not in EXCLUDED}
    assert leaks == {}, f"in clear: {leaks}"
    assert set(found) == set(EXCLUDED), "each exclusion must be where the marker really lands"


async def test_a_summary_copied_onto_another_contact_is_a_problem_not_the_other_childs_text(
    api: Api, pg_url: str
) -> None:
    case = await api.post("/v1/cases", api.worker, json={"title": "Doe"})
    contacts = f"/v1/cases/{case['id']}/contacts"
    first = await api.post(
        contacts,
        api.worker,
        json={"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": f"{MARK} disclosed"},
    )
    second = await api.post(
        contacts,
        api.worker,
        json={"contact_type": "phone_call", "occurred_at": "2026-01-06T10:00:00Z", "summary": "All well."},
    )
    conn = await asyncpg.connect(libpq_dsn(pg_url))
    try:
        await conn.execute(
            "UPDATE contacts SET summary = (SELECT summary FROM contacts WHERE id = $1) WHERE id = $2",
            uuid.UUID(first["id"]),
            uuid.UUID(second["id"]),
        )
    finally:
        await conn.close()
    for path in (f"{contacts}/{second['id']}", contacts):
        response = await api.client.get(path, headers=api.worker)
        assert response.status_code == 500, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert problem_code(response.json()) == "internal-error"
        assert MARK not in response.text and "Traceback" not in response.text
    shown = await api.client.get(f"{contacts}/{first['id']}", headers=api.worker)
    assert shown.status_code == 200 and shown.json()["summary"] == f"{MARK} disclosed"


async def test_a_partner_that_echoes_the_payload_leaves_none_of_it_in_any_column(pg_url: str, tmp_path: Path) -> None:
    """A partner's answer may quote the payload back (a child's name). The job keeps only where
    it failed and the status class, so the answer lands in no column of any table, and no admin
    sees it either."""
    fake = FakePartner(fail_each=1, fail_status=422, echo_failures=True)
    async with serving_partner(fake) as (_, base), serving("postgres", tmp_path, pg_url) as (container, client):
        try:
            admin = auth(container, role=Role.ADMIN)
            created = await client.post("/v1/exchange/partners", json=registration(base, "County"), headers=admin)
            body = {"partner_ids": [created.json()["id"]], "payload": {"name": f"{MARK} child"}}
            sent = await client.post("/v1/exchange/transactions", json=body, headers=auth(container))
            assert sent.status_code == 202, sent.text
            worker = send_job_scheduler(container)
            try:
                await worker.drain()
            finally:
                await worker.aclose()
        finally:
            await container.partner_gateway().aclose()
        shown = await client.get(sent.headers["location"], headers=auth(container, role=Role.ADMIN))
        [job] = shown.json()["jobs"]
        assert job["status"] == "failed" and job["last_error"] == "partner answered 422 (client error)"
    assert any(MARK in body for body in map(bytes.decode, fake.bodies))
    assert fake.received[0].status == 422  # the partner did answer, quoting the payload back
    cells = await every_cell(pg_url)
    assert cells[("exchange_send_jobs", "last_error")] == ["partner answered 422 (client error)"]
    events = cells[("event_outbox", "envelope")]
    assert any('"partner answered 422 (client error)"' in envelope for envelope in events)
    assert found_in(cells) == {}, "the marker is in no column of any table"


async def test_a_job_whose_payload_does_not_decrypt_is_never_sent(api: Api, pg_url: str) -> None:
    partner = await api.post("/v1/exchange/partners", api.admin, json=registration(api.fake_base, "County"))
    good, bad = [
        await api.post(
            "/v1/exchange/transactions", api.worker, json={"partner_ids": [partner["id"]], "payload": {"n": n}}
        )
        for n in (1, 2)
    ]
    conn = await asyncpg.connect(libpq_dsn(pg_url))
    try:  # the transaction's own ciphertext, bound to another table, moved onto its job
        await conn.execute(
            "UPDATE exchange_send_jobs j SET payload = t.payload FROM exchange_transactions t "
            "WHERE t.id = j.transaction_id AND j.id = $1",
            uuid.UUID(bad["jobs"][0]["id"]),
        )
    finally:
        await conn.close()
    worker = send_job_scheduler(api.container)
    try:
        await worker.drain()
    finally:
        await worker.aclose()
    assert [json.loads(body) for body in api.fake.bodies] == [{"n": 1}]  # only the good one went out
    jobs = {
        key: (await api.client.get(f"/v1/exchange/transactions/{t['id']}", headers=api.admin)).json()["jobs"][0]
        for key, t in (("good", good), ("bad", bad))
    }
    assert jobs["good"]["status"] == "sent"
    assert jobs["bad"]["status"] == "in_flight"  # its lease brings it back, until its attempts run out


async def test_an_attachment_stored_under_the_old_key_layout_still_downloads(api: Api, pg_url: str) -> None:
    """Rows written before keys dropped the file name: their key ends in it, and their file name
    is plaintext (read as such until rotated)."""
    case = await api.post("/v1/cases", api.worker, json={"title": "Doe"})
    contact_body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "ok"}
    contact = await api.post(f"/v1/cases/{case['id']}/contacts", api.worker, json=contact_body)
    attachment_id, png = uuid.uuid4(), png_bytes()
    legacy_key = f"cases/contacts/{case['id']}/{contact['id']}/{attachment_id}/old photo.png"
    await api.container.object_store().put(legacy_key, png, "image/png")
    conn = await asyncpg.connect(libpq_dsn(pg_url))
    try:
        await conn.execute(
            "INSERT INTO contact_attachments (id, contact_id, file_name, content_type, file_size, object_key,"
            " object_status, uploaded_by, worker_name) VALUES ($1, $2, 'old photo.png', 'image/png', $3, $4,"
            " 'present', $5, 'Ann')",
            attachment_id,
            uuid.UUID(contact["id"]),
            len(png),
            legacy_key,
            uuid.uuid4(),
        )
    finally:
        await conn.close()
    path = f"/v1/cases/{case['id']}/contacts/{contact['id']}/attachments/{attachment_id}"
    shown = await api.client.get(path, headers=api.worker)
    assert shown.status_code == 200 and shown.json()["file_name"] == "old photo.png"
    download = await api.client.get(f"{path}/content", headers=api.worker)
    assert download.status_code == 200 and download.content == png
    assert 'filename="old photo.png"' in download.headers["content-disposition"]


# --- craig keys rotate on what older code left -------------------------------------------------


def v1_ciphertext(key: str, key_id: str, plaintext: str) -> str:
    """A value as the format before v2 wrote it (associated data: version and key id only)."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(base64.b64decode(key)).encrypt(nonce, plaintext.encode(), f"craig:v1:{key_id}".encode())
    return f"enc:v1:{key_id}:" + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")


async def test_rotation_upgrades_v1_values_and_pre_encryption_plaintext(api: Api, pg_url: str, tmp_path: Path) -> None:
    case = await api.post("/v1/cases", api.worker, json={"title": "placeholder"})
    contact_body = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "placeholder"}
    contact = await api.post(f"/v1/cases/{case['id']}/contacts", api.worker, json=contact_body)
    partner = await api.post("/v1/exchange/partners", api.admin, json=registration(api.fake_base, "County"))
    accepted = await api.post(
        "/v1/exchange/transactions", api.worker, json={"partner_ids": [partner["id"]], "payload": {"a": 1}}
    )
    key_id = FieldEncryptor.from_setting(FIELD_KEY).current_key_id
    conn = await asyncpg.connect(libpq_dsn(pg_url))
    try:  # what the code before v2 and before migration 0011 wrote
        await conn.execute(
            "UPDATE contacts SET summary = $1 WHERE id = $2",
            v1_ciphertext(FIELD_KEY, key_id, f"{MARK} v1 summary"),
            uuid.UUID(contact["id"]),
        )
        await conn.execute(
            "UPDATE cases SET title = $1, family_name = $2 WHERE id = $3",
            f"{MARK} plain title",
            f"{MARK} plain family",
            uuid.UUID(case["id"]),
        )
        await conn.execute("UPDATE exchange_transactions SET payload = $1", f'{{"note": "{MARK} plain"}}')
        await conn.execute("UPDATE exchange_send_jobs SET payload = $1", f'{{"note": "{MARK} plain"}}')
        await conn.execute("UPDATE idempotency_responses SET body = $1", f'{{"title": "{MARK}"}}'.encode())
    finally:
        await conn.close()
    shown = await api.client.get(f"/v1/cases/{case['id']}", headers=api.worker)
    assert shown.json()["title"] == f"{MARK} plain title"  # legacy plaintext still reads
    summary = await api.client.get(f"/v1/cases/{case['id']}/contacts/{contact['id']}", headers=api.worker)
    assert summary.json()["summary"] == f"{MARK} v1 summary"  # and so does v1

    fresh = base64.b64encode(os.urandom(32)).decode()
    ring = f"new:{fresh},{key_id}:{FIELD_KEY}"
    rotating = apps.make_container(
        apps.make_settings("postgres", tmp_path / "rotate", pg_url, field_encryption_key=ring)
    )
    try:
        assert await keys.rotate(rotating) == 0
    finally:
        await rotating.postgres().dispose()

    cells = await every_cell(pg_url)
    assert found_in(cells).keys() <= EXCLUDED.keys()
    for column in ENCRYPTED_COLUMNS:
        values = cells[(column.table, column.column)]
        assert all(value.startswith("enc:v2:new:") for value in values), column
    new_only = apps.make_container(
        apps.make_settings("postgres", tmp_path / "new-only", pg_url, field_encryption_key=f"new:{fresh}")
    )
    try:
        uow = new_only.uow()
        async with uow:
            found_case = await uow.cases.get(uuid.UUID(case["id"]))
            found_contact = await uow.contacts.get(uuid.UUID(case["id"]), uuid.UUID(contact["id"]))
            transaction = await uow.exchange_transactions.get(uuid.UUID(accepted["id"]))
            jobs = await uow.send_jobs.for_transaction(uuid.UUID(accepted["id"]))
        assert found_case is not None and found_case.title == f"{MARK} plain title"
        assert found_case.family_name == f"{MARK} plain family"
        assert found_contact is not None and found_contact.summary == f"{MARK} v1 summary"
        assert transaction is not None and dict(transaction.payload) == {"note": f"{MARK} plain"}
        assert [dict(job.payload) for job in jobs] == [{"note": f"{MARK} plain"}]
    finally:
        await new_only.postgres().dispose()


async def test_every_encrypted_column_is_a_real_column(pg_url: str) -> None:
    cells = await every_cell(pg_url)
    missing = [str(c) for c in ENCRYPTED_COLUMNS if (c.table, c.column) not in cells]
    assert missing == []
    assert all(isinstance(c, EncryptedColumn) for c in ENCRYPTED_COLUMNS)
