"""Hostile bodies and tokens get a clear 4xx problem and log no traceback, never a 500.

- JSON nested deeper than the decoder goes (msgspec's ``RecursionError``): 400 ``invalid-request``,
  on the public intake form and under ``/v1`` alike.
- A multipart text part that is not in its charset, names a charset Python does not know
  (Litestar's ``UnicodeDecodeError`` / ``LookupError``), names one other than UTF-8, US-ASCII or
  ISO-8859-1 (punycode held the event loop for seconds; a NUL in the name was a 500), or holds
  more than 64 KiB: 400 ``invalid-request``, nothing stored.
- A correctly signed token whose ``exp`` no float holds (``10**400``): 401 like any bad token.
- A JSON body in UTF-16 is refused (400); the corrected UTF-8 retry with the same
  Idempotency-Key is not answered that stored 400 again.
- A client that disconnects before the end of its body is counted and logged as a 499 (client
  closed request), with no error line: it was Litestar's 500 with a traceback.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from craig.domain.access import Role
from craig.entrypoints.container import Container
from tests.support.apps import auth, serving
from tests.support.logs import craig_logging, json_lines
from tests.support.metrics import http_requests_counted
from tests.support.problems import problem_code

pytestmark = pytest.mark.integration

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
BOUNDARY = "hostile-boundary"
REFERRAL = {"child_first_name": "Tom", "child_age": 4, "concern": "Tom has bruises on his arms"}


@pytest.fixture(params=["memory", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Container, httpx.AsyncClient]]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with serving(request.param, tmp_path, pg_url) as served:
        yield served


@pytest.fixture
def logged(capsys: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    """Craig's own log configuration (JSON lines on stderr), read back through ``capsys``."""
    with craig_logging("INFO", json_lines=True):
        yield capsys


def assert_no_error_logged(capsys: pytest.CaptureFixture[str]) -> None:
    err = capsys.readouterr().err
    lines = []
    for line in err.splitlines():
        try:
            lines.extend(json_lines(line))
        except ValueError:  # not one of Craig's JSON lines
            continue
    assert not [line for line in lines if line.get("level") in ("error", "critical")], err
    assert "Traceback" not in err and "RecursionError" not in err


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert problem_code(body) == code
    assert "incident" not in body and "Traceback" not in response.text
    return body


# --- 1. JSON nested too deeply -------------------------------------------------------------------

DEEP_BODIES = {
    "1000 open arrays": b"[" * 1000,
    "5000 nested objects": b'{"a":' * 5000 + b"1" + b"}" * 5000,
}


@pytest.mark.parametrize("body", list(DEEP_BODIES.values()), ids=list(DEEP_BODIES))
@pytest.mark.parametrize("route", ["/intake/referrals", "/v1/cases"])
async def test_json_nested_too_deeply_is_a_400_problem(
    api: tuple[Container, httpx.AsyncClient], logged: pytest.CaptureFixture[str], route: str, body: bytes
) -> None:
    container, client = api
    headers = {"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex}
    if route.startswith("/v1"):
        headers.update(auth(container))
    response = await client.post(route, content=body, headers=headers)
    problem = assert_problem(response, 400, "invalid-request")
    assert "nested too deeply" in problem["detail"]
    assert problem["errors"] == [{"pointer": "", "code": "malformed", "message": problem["detail"]}]
    assert_no_error_logged(logged)
    # The app is still serving, and the same key replays the refusal (a 4xx is stored).
    again = await client.post(route, content=body, headers=headers)
    assert again.status_code == 400 and again.headers.get("idempotent-replayed") == "true"


async def test_a_misspelt_field_is_refused_not_dropped_and_nothing_is_stored(
    api: tuple[Container, httpx.AsyncClient],
) -> None:
    """Opening a case with ``famly_name`` stored a case with no family name and answered 201;
    an assignment and a contact took unknown fields the same way. They answer 400 naming the
    field, as every other body of the API does, and store nothing."""
    container, client = api
    headers = auth(container, role=Role.SUPERVISOR)
    typo = await client.post("/v1/cases", json={"title": "Doe family", "famly_name": "Doe"}, headers=headers)
    assert assert_problem(typo, 400, "invalid-request")["errors"] == [
        {"pointer": "/famly_name", "code": "unknown-field", "message": "Object contains unknown field `famly_name`"}
    ]
    listed = await client.get("/v1/cases", headers=headers)
    assert listed.status_code == 200 and listed.json()["items"] == []
    opened = await client.post("/v1/cases", json={"title": "Doe family"}, headers=headers)
    assert opened.status_code == 201, opened.text
    case = opened.json()["id"]
    refused = {
        "assignments": {"worker_sub": str(uuid.uuid4()), "role": "lead"},
        "contacts": {
            "contact_type": "home_visit",
            "occurred_at": "2026-01-05T10:00:00Z",
            "summary": "Saw both children.",
            "attachments": [1],
        },
    }
    for path, body in refused.items():
        answer = await client.post(f"/v1/cases/{case}/{path}", json=body, headers=headers)
        unknown = next(name for name in body if name not in ("worker_sub", "contact_type", "occurred_at", "summary"))
        assert [e["pointer"] for e in assert_problem(answer, 400, "invalid-request")["errors"]] == [f"/{unknown}"]
    contacts = await client.get(f"/v1/cases/{case}/contacts", headers=headers)
    assert contacts.status_code == 200 and contacts.json()["items"] == []
    case_now = await client.get(f"/v1/cases/{case}", headers=headers)
    assert (case_now.json()["assigned_workers"], case_now.json()["version"]) == ([], 1)


# --- 2. multipart text parts Litestar cannot decode ---------------------------------------------


def multipart(text_part: bytes) -> bytes:
    file_part = (
        b'Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n' + PNG
    )
    delimiter = f"--{BOUNDARY}\r\n".encode()
    return delimiter + file_part + b"\r\n" + delimiter + text_part + f"\r\n--{BOUNDARY}--\r\n".encode()


TEXT_PARTS = {
    "not utf-8": b'Content-Disposition: form-data; name="attachment_type"\r\n\r\n\xff',
    "unknown charset": (
        b'Content-Disposition: form-data; name="attachment_type"\r\n'
        b"Content-Type: text/plain; charset=bogus\r\n\r\nschool report"
    ),
    "not a text encoding": (
        b'Content-Disposition: form-data; name="attachment_type"\r\n'
        b"Content-Type: text/plain; charset=rot13\r\n\r\nschool report"
    ),
    # Python's punycode codec is pure Python and quadratic: 400 KB held the event loop 4 s.
    "a codec that is slow on purpose": (
        b'Content-Disposition: form-data; name="attachment_type"\r\n'
        b"Content-Type: text/plain; charset=punycode\r\n\r\n" + b"a" * 400_000
    ),
    "a NUL in the charset (a 500)": (
        b'Content-Disposition: form-data; name="attachment_type"\r\n'
        b'Content-Type: text/plain; charset="utf\x008"\r\n\r\nschool report'
    ),
    "a text part longer than a field needs": (
        b'Content-Disposition: form-data; name="attachment_type"\r\n\r\n' + b"a" * (64 * 1024 + 1)
    ),
}


@pytest.mark.parametrize("text_part", list(TEXT_PARTS.values()), ids=list(TEXT_PARTS))
async def test_a_form_part_that_cannot_be_decoded_is_a_400_problem(
    api: tuple[Container, httpx.AsyncClient], logged: pytest.CaptureFixture[str], text_part: bytes
) -> None:
    container, client = api
    headers = auth(container)
    case = await client.post("/v1/cases", json={"title": "Doe family"}, headers=headers)
    assert case.status_code == 201, case.text
    contact = await client.post(
        f"/v1/cases/{case.json()['id']}/contacts",
        json={"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": "Saw them."},
        headers=headers,
    )
    assert contact.status_code == 201, contact.text
    path = f"/v1/cases/{case.json()['id']}/contacts/{contact.json()['id']}/attachments"

    response = await client.post(
        path,
        content=multipart(text_part),
        headers={**headers, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    problem = assert_problem(response, 400, "invalid-request")
    assert "charset" in problem["detail"] or "more than 65536 bytes" in problem["detail"]
    assert_no_error_logged(logged)
    assert (await client.get(path, headers=headers)).json()["items"] == []

    # The same form with a readable text part is stored.
    readable = b'Content-Disposition: form-data; name="attachment_type"\r\n\r\nschool report'
    stored = await client.post(
        path,
        content=multipart(readable),
        headers={**headers, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert stored.status_code == 201, stored.text
    assert stored.json()["attachment_type"] == "school report"
    latin = (
        b'Content-Disposition: form-data; name="attachment_type"\r\n'
        b"Content-Type: text/plain; charset=ISO-8859-1\r\n\r\nbulletin scolaire \xe9t\xe9"
    )
    stored = await client.post(
        path, content=multipart(latin), headers={**headers, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    )
    assert stored.status_code == 201, stored.text
    assert stored.json()["attachment_type"] == "bulletin scolaire \u00e9t\u00e9"


@pytest.mark.parametrize(
    "media_type", ["text/plain", "application/octet-stream", "multipart/mixed", "application/x-www-form-urlencoded"]
)
async def test_a_form_under_another_media_type_is_refused_before_it_is_parsed(
    api: tuple[Container, httpx.AsyncClient], logged: pytest.CaptureFixture[str], media_type: str
) -> None:
    """Litestar parses any body with a boundary as a form: the route refuses it first, so an
    undecodable part under another media type is not a 500 either."""
    container, client = api
    headers = auth(container)
    case = await client.post("/v1/cases", json={"title": "Doe family"}, headers=headers)
    contact = await client.post(
        f"/v1/cases/{case.json()['id']}/contacts",
        json={"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00+01:00", "summary": "Saw them."},
        headers=headers,
    )
    path = f"/v1/cases/{case.json()['id']}/contacts/{contact.json()['id']}/attachments"
    response = await client.post(
        path,
        content=multipart(TEXT_PARTS["not utf-8"]),
        headers={**headers, "Content-Type": f"{media_type}; boundary={BOUNDARY}"},
    )
    problem = assert_problem(response, 415, "unsupported-media-type")
    assert "multipart/form-data" in problem["detail"]
    assert_no_error_logged(logged)
    assert (await client.get(path, headers=headers)).json()["items"] == []


# --- 3. a signed token whose exp no float holds ------------------------------------------------


@pytest.mark.parametrize("exp", [10**400, "9" * 400], ids=["int", "digit string"])
async def test_a_signed_token_with_an_exp_out_of_range_is_a_401(
    api: tuple[Container, httpx.AsyncClient], logged: pytest.CaptureFixture[str], exp: object
) -> None:
    container, client = api
    settings = container.settings().auth
    now = int(time.time())
    claims = {
        "sub": str(uuid.uuid4()),
        "name": "Ann",
        "role": str(Role.CASEWORKER),
        "iss": settings.issuer,
        "aud": settings.audience,
        "iat": now,
        "nbf": now,
        "exp": exp,
    }
    token = jwt.encode(claims, settings.jwt_secret, algorithm="HS256")
    for _ in range(2):  # and not remembered as valid in between
        response = await client.get("/v1/cases", headers={"Authorization": f"Bearer {token}"})
        problem = assert_problem(response, 401, "unauthorized")
        assert "exp" in problem["detail"]
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert_no_error_logged(logged)


# --- 4. a UTF-16 body refused is not the answer to its UTF-8 retry ----------------------------


async def test_the_utf8_retry_of_a_refused_utf16_body_is_not_answered_the_refusal(
    api: tuple[Container, httpx.AsyncClient],
) -> None:
    container, client = api
    text = '{"title": "Doe family"}'
    key = uuid.uuid4().hex
    headers = {**auth(container), "Content-Type": "application/json", "Idempotency-Key": key}

    refused = await client.post("/v1/cases", content=text.encode("utf-16"), headers=headers)
    assert_problem(refused, 400, "invalid-request")

    retried = await client.post("/v1/cases", content=text.encode(), headers=headers)
    assert retried.headers.get("idempotent-replayed") != "true", retried.text
    # Another body under the same key: the contract's 422 (use a new key), not the stored 400.
    assert_problem(retried, 422, "idempotency-key-reused")

    fresh = await client.post(
        "/v1/cases", content=text.encode(), headers={**headers, "Idempotency-Key": uuid.uuid4().hex}
    )
    assert fresh.status_code == 201, fresh.text


# --- 5. a client gone before the end of its body ---------------------------------------------


@pytest.mark.parametrize("keyed", [False, True], ids=["without a key", "with an Idempotency-Key"])
async def test_a_client_gone_before_the_end_of_its_body_is_a_499_not_a_500(
    api: tuple[Container, httpx.AsyncClient], logged: pytest.CaptureFixture[str], keyed: bool
) -> None:
    container, client = api
    family = f"Gone-{uuid.uuid4().hex[:8]}"
    before = {status: http_requests_counted("POST", "/v1/cases", status) for status in (499, 500)}
    head = [
        "POST /v1/cases HTTP/1.1",
        "Host: craig",
        "Content-Type: application/json",
        auth(container)["Authorization"].join(("Authorization: ", "")),
        "Content-Length: 1000",
    ]
    if keyed:
        head.append(f"Idempotency-Key: {uuid.uuid4().hex}")
    _, writer = await asyncio.open_connection(client.base_url.host, client.base_url.port)
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + f'{{"family_name": "{family}", '.encode())
    await writer.drain()
    await asyncio.sleep(0.3)  # the body is being read
    writer.close()
    await writer.wait_closed()
    for _ in range(200):
        if http_requests_counted("POST", "/v1/cases", 499) > before[499]:
            break
        await asyncio.sleep(0.05)
    assert http_requests_counted("POST", "/v1/cases", 499) == before[499] + 1
    assert http_requests_counted("POST", "/v1/cases", 500) == before[500]
    listed = await client.get("/v1/cases", params={"family_name": family}, headers=auth(container))
    assert listed.status_code == 200 and listed.json()["items"] == []
    assert_no_error_logged(logged)
