"""The SQL statements Craig's routes run, as PostgreSQL logs them (``log_statement=all``).

``bench/bare_app.py`` must run exactly these, per scenario of ``bench/api.py``; run this after
a change to a route's use case (or to the audit trail) and compare:

    .venv/bin/python -m bench.craig_statements

It starts a PostgreSQL 18 of its own (the embedded one, logging every statement), ``craig serve``
on it without background workers (their polling would interleave), sends each scenario's
request once to warm up and once more between two markers, and prints what the API's
connections ran between the markers.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import asyncpg

from bench._api_server import CraigServer, craig_server
from bench._services import _admin
from craig.adapters.postgres.database import libpq_dsn
from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.adapters.postgres.migrations import upgrade_to_head
from craig.domain.access import Role

MARK = "bench-marker"


def request(
    server: CraigServer, method: str, path: str, token: str, body: object = None, **headers: str
) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    sent = urllib.request.Request(
        server.base_url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers},
    )
    with urllib.request.urlopen(sent, timeout=30) as response:
        return response.status, response.read()


def scenarios(server: CraigServer) -> Iterator[tuple[str, Callable[[], object]]]:
    """(name, send the request once) per scenario, on a case the token's worker opened."""
    token = server.token(role=Role.CASEWORKER, sub=uuid.uuid4(), name="Ann")
    _, body = request(server, "POST", "/v1/cases", token, {"title": "Doe family", "family_name": "Doe"})
    case_id = json.loads(body)["id"]
    replay_key = uuid.uuid4().hex
    contact = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "Saw both children."}
    new_case = {"title": "Roe family", "family_name": "Roe"}
    yield "open_case", lambda: request(server, "POST", "/v1/cases", token, new_case)
    yield (
        "open_case_idempotent",
        lambda: request(server, "POST", "/v1/cases", token, new_case, **{"Idempotency-Key": uuid.uuid4().hex}),
    )
    request(server, "POST", "/v1/cases", token, new_case, **{"Idempotency-Key": replay_key})
    yield "replay", lambda: request(server, "POST", "/v1/cases", token, new_case, **{"Idempotency-Key": replay_key})
    yield "get_case", lambda: request(server, "GET", f"/v1/cases/{case_id}", token)
    yield "list_cases", lambda: request(server, "GET", "/v1/cases?limit=20", token)
    yield "record_contact", lambda: request(server, "POST", f"/v1/cases/{case_id}/contacts", token, contact)
    yield "me", lambda: request(server, "GET", "/v1/me", token)


_ENTRY = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (\w+):  (.*)$")


def statements_between_markers(log: str) -> dict[str, list[str]]:
    """Per scenario, the statements logged between its two markers (continuation lines of a
    statement joined; parameters left out; the marker's own connection left out)."""
    entries: list[tuple[str, str]] = []  # (pid, text)
    for raw in log.splitlines():
        match = _ENTRY.match(raw)
        if match:
            pid, level, text = match.groups()
            entries.append((pid, text if level == "LOG" else ""))
        elif entries and raw.startswith("\t"):
            pid, text = entries[-1]
            entries[-1] = (pid, f"{text} {raw.strip()}" if text else "")
    found: dict[str, list[str]] = {}
    current: str | None = None
    marker_pid: str | None = None
    for pid, text in entries:
        marker = re.search(rf"'{MARK} (\w+) (begin|end)'", text)
        if marker:
            marker_pid = pid
            current = marker.group(1) if marker.group(2) == "begin" else None
            continue
        if current is None or pid == marker_pid or not text.startswith(("statement:", "execute")):
            continue
        statement = re.sub(r"^(statement|execute [^:]*):\s*", "", text)
        found.setdefault(current, []).append(" ".join(statement.split()))
    return found


@contextlib.contextmanager
def bare_served(url: str, audited: list[str]) -> Iterator[CraigServer]:
    from bench.api import bare_server

    with bare_server(url, audited, 1) as (base_url, pid):
        yield CraigServer(base_url, pid)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--bare",
        metavar="AUDITED",
        help="log bench/bare_app.py's statements instead, with BARE_AUDITED=AUDITED (comma-separated; '' for none)",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="craig-bench-statements-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(
        root / "pg",
        fsync="off",
        synchronous_commit="off",
        log_statement="all",
        log_line_prefix="%m [%p] ",
    )
    try:
        server.start()
        _admin(server.url("postgres"), 'CREATE DATABASE "bench"')
        url = server.url("bench")
        if args.bare is not None:
            upgrade_to_head(url)
        audited = [name for name in (args.bare or "").split(",") if name]
        with (
            craig_server(url, settings={"workers__in_process": "false"})
            if args.bare is None
            else bare_served(url, audited)
        ) as craig:
            marker: asyncpg.Connection = None  # type: ignore[assignment]

            import asyncio

            async def connect() -> asyncpg.Connection:
                return await asyncpg.connect(libpq_dsn(url))

            loop = asyncio.new_event_loop()
            marker = loop.run_until_complete(connect())
            try:
                for name, send in scenarios(craig):
                    send()  # warm up: prepared statements, caches
                    loop.run_until_complete(marker.execute(f"SELECT '{MARK} {name} begin'"))
                    send()
                    loop.run_until_complete(marker.execute(f"SELECT '{MARK} {name} end'"))
            finally:
                loop.run_until_complete(marker.close())
                loop.close()
        for name, statements in statements_between_markers(server.log_file.read_text()).items():
            print(f"== {name}")
            for statement in statements:
                print(f"  {statement}")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
