"""What recording the audit trail costs, over real HTTP, measured side by side in one run.

Two ``craig serve`` processes on one PostgreSQL: one records audit entries, the other runs with
``CRAIG_AUDIT__ENABLED=false`` (benchmarks only). Both serve the same case to the same case
worker; wrk loads ``GET /v1/cases/{id}`` on each in alternating rounds. Then writers: the
audited server opens cases (``POST /v1/cases``) with 1 connection and with 16; throughput must
grow with writers, since an audit entry is a plain INSERT that takes no shared lock.

Printed: req/s, p50 and p99 per server, the ratio audited/unaudited (target >= 0.8), the
writers' ratio 16/1, and, as a sanity check (not a timing), how many audit entries each phase
wrote: the audited server's, and the unaudited server's (which must be none).

    .venv/bin/python -m bench.audit                       # about 2.5 minutes
    .venv/bin/python -m bench.audit --duration 3 --rounds 1 --write-duration 3   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import urllib.request
import uuid
from collections.abc import Callable

import asyncpg

from bench._api_server import CraigServer, RssSampler, WrkResult, craig_server, lua_script, require_wrk, run_wrk
from bench._services import exit_cleanly_on_sigterm, postgres_database
from craig.adapters.postgres.database import libpq_dsn
from craig.domain.access import Role


def post_json(server: CraigServer, path: str, body: object, token: str) -> dict[str, object]:
    request = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def audit_entries(url: str, actor_name: str | None = None) -> int:
    """The audit entries in the database (of the actor named ``actor_name``, when given)."""

    async def count() -> int:
        conn = await asyncpg.connect(libpq_dsn(url))
        try:
            if actor_name is None:
                return int(await conn.fetchval("SELECT count(*) FROM audit_entries"))
            return int(await conn.fetchval("SELECT count(*) FROM audit_entries WHERE actor_name = $1", actor_name))
        finally:
            await conn.close()

    return asyncio.run(count())


def counted(url: str, actor_name: str, load: Callable[[], WrkResult]) -> tuple[WrkResult, int]:
    """``load``'s result and the audit entries its token's actor had written once it ended
    (requests still in flight when wrk stops included)."""
    before = audit_entries(url, actor_name)
    result = load()
    time.sleep(1)
    return result, audit_entries(url, actor_name) - before


def line(name: str, results: list[WrkResult]) -> str:
    rps = statistics.median(r.requests_per_second for r in results)
    p50 = statistics.median(r.p50_ms for r in results)
    p99 = statistics.median(r.p99_ms for r in results)
    bad = sum(r.bad_responses + r.socket_errors for r in results)
    requests = sum(r.requests for r in results)
    rounds = "/".join(f"{r.requests_per_second:.0f}" for r in results)
    return (
        f"  {name:<34} {rps:>9.0f} req/s  p50 {p50:>7.2f} ms  p99 {p99:>7.2f} ms  "
        f"({requests} requests, {bad} bad; rounds {rounds} req/s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per read round (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating read rounds (default 3)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections for reads (default 16)")
    parser.add_argument("--write-duration", type=float, default=8.0, help="seconds per writer run (default 8)")
    parser.add_argument("--writers", type=int, default=16, help="connections of the many-writers run (default 16)")
    args = parser.parse_args()
    require_wrk()
    exit_cleanly_on_sigterm()

    with postgres_database() as url, craig_server(url) as audited, craig_server(url, audit=False) as unaudited:
        # One case worker, named apart on each server so that the entries each wrote can be told apart.
        sub = uuid.uuid4()
        names = {"audited": "Ann via the audited server", "unaudited": "Ann via the unaudited server"}
        tokens = {side: audited.token(role=Role.CASEWORKER, sub=sub, name=name) for side, name in names.items()}
        worker = tokens["audited"]
        case = post_json(audited, "/v1/cases", {"title": "Doe family", "family_name": "Doe"}, worker)
        path = f"/v1/cases/{case['id']}"
        readers = {side: lua_script(headers={"Authorization": f"Bearer {token}"}) for side, token in tokens.items()}
        for side, server in (("audited", audited), ("unaudited", unaudited)):  # warm up: connections, caches
            run_wrk(server.base_url + path, connections=args.connections, duration=2, script=readers[side])

        reads: dict[str, list[WrkResult]] = {"audited": [], "unaudited": []}
        written = {"audited": 0, "unaudited": 0}
        rss = {"audited": 0.0, "unaudited": 0.0}
        for round_ in range(args.rounds):
            order = [("audited", audited), ("unaudited", unaudited)]
            for name, server in order if round_ % 2 == 0 else reversed(order):
                with RssSampler([server.pid]) as sampler:
                    result, entries = counted(
                        url,
                        names[name],
                        lambda server=server, name=name: run_wrk(  # type: ignore[misc]
                            server.base_url + path,
                            connections=args.connections,
                            duration=args.duration,
                            script=readers[name],
                        ),
                    )
                reads[name].append(result)
                written[name] += entries
                rss[name] = max(rss[name], sampler.max_mib)

        rounds = f"{args.rounds} x {args.duration:g} s each"
        print(f"GET /v1/cases/{{id}}: {args.connections} connections, {rounds}, medians")
        print(line("audited", reads["audited"]))
        print(line("unaudited (AUDIT__ENABLED=false)", reads["unaudited"]))
        ratio = statistics.median(r.requests_per_second for r in reads["audited"]) / statistics.median(
            r.requests_per_second for r in reads["unaudited"]
        )
        print(f"  ratio audited/unaudited: {ratio:.2f} (target >= 0.8)")
        print(f"  RSS under load: audited {rss['audited']:.0f} MiB, unaudited {rss['unaudited']:.0f} MiB")
        wrk_cpu = max(r.wrk_cpu_percent for rs in reads.values() for r in rs)
        print(f"  wrk's own CPU: at most {wrk_cpu:.0f}% of one core")
        for name in ("audited", "unaudited"):
            requests = sum(r.requests for r in reads[name])
            print(f"  sanity: the {name} server wrote {written[name]} audit entries for {requests} reads")
        print("  (requests still in flight when wrk stops complete afterwards: they write entries wrk does not count)")
        if written["audited"] == 0:
            print("  (GET /v1/cases/{id} records no `read` entry on this build: the read ratio measures no audit cost)")

        opener = lua_script(
            "POST",
            {"Authorization": f"Bearer {worker}", "Content-Type": "application/json"},
            json.dumps({"title": "Roe family", "family_name": "Roe"}),
        )
        writes: dict[int, WrkResult] = {}
        write_entries: dict[int, int] = {}
        for connections in (1, args.writers):
            writes[connections], write_entries[connections] = counted(
                url,
                names["audited"],
                lambda connections=connections: run_wrk(  # type: ignore[misc]
                    audited.base_url + "/v1/cases",
                    connections=connections,
                    duration=args.write_duration,
                    script=opener,
                ),
            )
        print(f"\nPOST /v1/cases on the audited server, {args.write_duration:g} s each")
        for connections, result in writes.items():
            print(line(f"{connections} connection(s)", [result]))
        growth = writes[args.writers].requests_per_second / writes[1].requests_per_second
        print(f"  ratio {args.writers} writers / 1 writer: {growth:.2f} (> 1: no serialisation on a row or lock)")
        for connections, result in writes.items():
            print(
                f"  sanity: {connections} writer(s) opened {result.requests} cases, "
                f"{write_entries[connections]} audit entries written"
            )
        if not any(write_entries.values()):
            print("  (POST /v1/cases records no `create` entry on this build: the writers measure no audit cost)")


if __name__ == "__main__":
    main()
