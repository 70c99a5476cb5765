"""Craig's API against its bare twin, route by route, over real HTTP with wrk.

``craig serve`` and ``bench/bare_app.py`` (Litestar + asyncpg + PyJWT running exactly the SQL
statements of Craig's route) each run as one uvicorn process with the same uvicorn settings, on
one PostgreSQL. For every scenario wrk loads Craig and the twin in turn (32 connections, ~8 s,
the order alternating), and the bench prints req/s, p50, p99 and the ratio Craig/bare, the
largest resident memory of the Craig process(es) under load, and wrk's own CPU use, so that a
reader can see wrk is not the bottleneck (the bare ``/v1/me`` must reach far more req/s than any
Craig scenario). Each run's CPU is printed too: the server's processes, the embedded
PostgreSQL's and the whole machine's, so a reader sees which core was busy with what (and
whether ``--workers`` had a free core to use).

Before loading, each scenario's request is sent once to Craig and the audit entries it wrote are
counted: the twin appends an entry in exactly those scenarios (``BARE_AUDITED``), so it follows
the build it is compared with.

    .venv/bin/python -m bench.api                        # about 2.5 minutes
    .venv/bin/python -m bench.api --duration 3           # quicker
    .venv/bin/python -m bench.api --separate-workers     # background workers in `craig worker`
    .venv/bin/python -m bench.api --workers 2            # `craig serve --workers 2` (and 2 bare workers)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import attrs

from bench._api_server import (
    FIELD_KEY,
    JWT_SECRET,
    ROOT,
    CraigServer,
    RssSampler,
    WrkResult,
    _start,
    _wait_ready,
    craig_command,
    craig_server,
    free_port,
    lua_script,
    require_wrk,
    run_wrk,
    stop,
)
from bench._services import EMBEDDED_POSTMASTER, exit_cleanly_on_sigterm, postgres_database
from bench.audit import audit_entries
from craig.adapters.postgres.database import libpq_dsn
from craig.domain.access import Role

NEW_CASE = {"title": "Roe family", "family_name": "Roe"}
CONTACT = {"contact_type": "home_visit", "occurred_at": "2026-01-05T10:00:00Z", "summary": "Saw both children."}
#: Cases each side's worker opens before loading, so that a page of 20 is full.
SEEDED_CASES = 25


@attrs.frozen
class Target:
    """One server under test and what its scenarios need: a token, a case of the token's worker
    and an idempotency key whose answer is stored."""

    base_url: str
    pids: tuple[int, ...]
    token: str
    case_id: str
    replay_key: str


@attrs.frozen
class Scenario:
    name: str
    label: str
    #: (path, wrk script) for a target
    load: Callable[[Target], tuple[str, str]]


def _headers(target: Target, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {target.token}", "Content-Type": "application/json", **more}


SCENARIOS = (
    Scenario("me", "GET /v1/me", lambda t: ("/v1/me", lua_script(headers=_headers(t)))),
    Scenario("get_case", "GET /v1/cases/{id}", lambda t: (f"/v1/cases/{t.case_id}", lua_script(headers=_headers(t)))),
    Scenario("list_cases", "GET /v1/cases?limit=20", lambda t: ("/v1/cases?limit=20", lua_script(headers=_headers(t)))),
    Scenario(
        "replay",
        "POST /v1/cases replayed",
        lambda t: (
            "/v1/cases",
            lua_script("POST", _headers(t, **{"Idempotency-Key": t.replay_key}), json.dumps(NEW_CASE)),
        ),
    ),
    Scenario(
        "open_case", "POST /v1/cases", lambda t: ("/v1/cases", lua_script("POST", _headers(t), json.dumps(NEW_CASE)))
    ),
    Scenario(
        "open_case_idempotent",
        "POST /v1/cases + Idempotency-Key",
        lambda t: (
            "/v1/cases",
            lua_script("POST", _headers(t), json.dumps(NEW_CASE), unique_header="Idempotency-Key"),
        ),
    ),
    Scenario(
        "record_contact",
        "POST /v1/cases/{id}/contacts",
        lambda t: (f"/v1/cases/{t.case_id}/contacts", lua_script("POST", _headers(t), json.dumps(CONTACT))),
    ),
)


def send(base_url: str, method: str, path: str, token: str, body: object = None, **headers: str) -> bytes:
    request = urllib.request.Request(
        base_url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: bytes = response.read()
        return answer


def prepare(base_url: str, pids: tuple[int, ...], token: str) -> Target:
    """Seed a target: the worker's cases, and one stored idempotent answer to replay."""
    case_id = ""
    for _ in range(SEEDED_CASES):
        case_id = json.loads(send(base_url, "POST", "/v1/cases", token, {"title": "Doe family", "family_name": "Doe"}))[
            "id"
        ]
    key = uuid.uuid4().hex
    send(base_url, "POST", "/v1/cases", token, NEW_CASE, **{"Idempotency-Key": key})
    return Target(base_url, pids, token, case_id, key)


def audited_scenarios(craig: Target, database_url: str) -> list[str]:
    """The scenarios for which Craig wrote an audit entry (each request sent once)."""
    found = []
    for scenario in SCENARIOS:
        path, _ = scenario.load(craig)
        method = "POST" if scenario.name in ("replay", "open_case", "open_case_idempotent", "record_contact") else "GET"
        body = {"record_contact": CONTACT}.get(scenario.name, NEW_CASE) if method == "POST" else None
        headers = {
            "replay": {"Idempotency-Key": craig.replay_key},
            "open_case_idempotent": {"Idempotency-Key": uuid.uuid4().hex},
        }.get(scenario.name, {})
        before = audit_entries(database_url)
        send(craig.base_url, method, path, craig.token, body, **headers)
        if audit_entries(database_url) > before:
            found.append(scenario.name)
    return found


@contextmanager
def bare_server(database_url: str, audited: list[str], workers: int) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {
        **{name: value for name, value in __import__("os").environ.items() if not name.startswith("CRAIG_")},
        "BARE_DATABASE_URL": libpq_dsn(database_url),
        "BARE_JWT_SECRET": JWT_SECRET,
        "BARE_FIELD_KEY": FIELD_KEY,
        "BARE_AUDITED": ",".join(audited),
        "PYTHONPATH": str(ROOT),
    }
    logs = Path(tempfile.mkdtemp(prefix="craig-bench-bare-"))
    command = [sys.executable, "-m", "bench.bare_app", "--port", str(port), "--workers", str(workers)]
    process = _start(command, env, logs / "bare.log")
    try:
        _wait_ready(f"http://127.0.0.1:{port}", [process], [logs / "bare.log"])
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        stop(process)
        shutil.rmtree(logs, ignore_errors=True)


def serve_supports_workers() -> bool:
    done = subprocess.run([*craig_command("serve", "--help")], capture_output=True, text=True, cwd=ROOT, check=False)
    return "--workers" in done.stdout


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per wrk run (default 8)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (default 32)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per server and scenario, alternating (default 1)")
    parser.add_argument("--workers", type=int, default=0, help="run `craig serve --workers N` (and N bare workers)")
    parser.add_argument("--only", default="", help="comma-separated scenario names (default: all)")
    placement = parser.add_mutually_exclusive_group()
    placement.add_argument(
        "--in-process-workers",
        dest="separate",
        action="store_false",
        help="background workers inside `craig serve` (the default, as the embedded profile runs them)",
    )
    placement.add_argument(
        "--separate-workers", dest="separate", action="store_true", help="background workers in a `craig worker`"
    )
    parser.set_defaults(separate=False)
    args = parser.parse_args()
    require_wrk()
    exit_cleanly_on_sigterm()
    serve_args: list[str] = []
    workers = 1
    if args.workers:
        if serve_supports_workers():
            serve_args, workers = ["--workers", str(args.workers)], args.workers
        else:
            print(f"`craig serve --workers` does not exist on this build: skipping --workers {args.workers}")
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only.split(",")]

    with (
        postgres_database() as url,
        craig_server(url, serve_args=serve_args, separate_worker=args.separate) as server,
    ):
        craig = prepare(server.base_url, (server.pid, *server.helper_pids), craig_token(server))
        audited = audited_scenarios(craig, url)
        with bare_server(url, audited, workers) as (bare_url, bare_pid):
            bare = prepare(bare_url, (bare_pid,), craig_token(server))
            results = measure(chosen, craig, bare, args)
        report(chosen, results, audited, args, workers)


def craig_token(server: CraigServer) -> str:
    return server.token(role=Role.CASEWORKER, sub=uuid.uuid4(), name="Ann")


@attrs.frozen
class Run:
    """One wrk run against one side: wrk's result, the server's largest RSS in MiB, and CPU in % of
    one core over the run: the server's (all its processes), PostgreSQL's (the embedded server's
    processes; 0 on another server) and the whole machine's (200 is both cores busy)."""

    wrk: WrkResult
    rss_mib: float
    cpu: float
    database_cpu: float
    machine_cpu: float


#: Per scenario and side, its runs.
Results = dict[str, dict[str, list[Run]]]


def measure(chosen: list[Scenario], craig: Target, bare: Target, args: argparse.Namespace) -> Results:
    results: Results = {s.name: {"craig": [], "bare": []} for s in chosen}
    targets: Mapping[str, Target] = {"craig": craig, "bare": bare}
    flip = False
    for scenario in chosen:
        for target in targets.values():  # warm up: pools, prepared statements
            path, script = scenario.load(target)
            run_wrk(target.base_url + path, connections=args.connections, duration=1, script=script)
        for _ in range(args.rounds):
            for side in ("bare", "craig") if flip else ("craig", "bare"):
                target = targets[side]
                path, script = scenario.load(target)
                postmaster = EMBEDDED_POSTMASTER[0] if EMBEDDED_POSTMASTER else None
                with RssSampler(target.pids, postmaster=postmaster) as rss:
                    result = run_wrk(
                        target.base_url + path,
                        connections=args.connections,
                        duration=args.duration,
                        threads=args.threads,
                        script=script,
                    )
                run = Run(result, rss.max_mib, rss.cpu_percent, rss.database_cpu_percent, rss.machine_cpu_percent)
                results[scenario.name][side].append(run)
            flip = not flip
    return results


def report(
    chosen: list[Scenario], results: Results, audited: list[str], args: argparse.Namespace, workers: int
) -> None:
    where = "a separate `craig worker`" if args.separate else "in the serve process"
    print(
        f"\n{args.connections} connections, {args.duration:g} s per run, {args.rounds} run(s) per side, "
        f"{workers} server process(es) each, background workers {where}; medians"
    )
    print(f"scenarios that append an audit entry on this build: {', '.join(audited) or 'none'}\n")
    header = f"{'scenario':<34}{'Craig req/s':>12}{'p50 ms':>9}{'p99 ms':>9}{'bare req/s':>12}{'p50 ms':>9}"
    print(
        header
        + f"{'p99 ms':>9}{'Craig/bare':>12}{'Craig RSS':>11}{'CPU':>15}{'PostgreSQL':>13}{'machine':>13}{'errors':>8}"
    )
    highest_craig = 0.0
    wrk_cpu = 0.0
    craig_rss = 0.0
    for scenario in chosen:
        sides = results[scenario.name]
        row = f"{scenario.label:<34}"
        rps: dict[str, float] = {}
        for side in ("craig", "bare"):
            runs = [run.wrk for run in sides[side]]
            rps[side] = median([r.requests_per_second for r in runs])
            row += f"{rps[side]:>12.0f}{median([r.p50_ms for r in runs]):>9.1f}{median([r.p99_ms for r in runs]):>9.1f}"
            wrk_cpu = max(wrk_cpu, *(r.wrk_cpu_percent for r in runs))
        errors = sum(r.wrk.bad_responses + r.wrk.socket_errors for side in sides.values() for r in side)
        rss = max(r.rss_mib for r in sides["craig"])
        cpu = {side: median([r.cpu for r in sides[side]]) for side in sides}
        database = {side: median([r.database_cpu for r in sides[side]]) for side in sides}
        machine = {side: median([r.machine_cpu for r in sides[side]]) for side in sides}
        craig_rss = max(craig_rss, rss)
        if scenario.name != "me":  # the scenarios that reach the database
            highest_craig = max(highest_craig, rps["craig"])
        cpus = "".join(f"{figures['craig']:>8.0f}%{figures['bare']:>5.0f}%" for figures in (cpu, database, machine))
        print(row + f"{rps['craig'] / rps['bare']:>12.2f}{rss:>8.0f} MiB   {cpus}{errors:>8}")
    print(f"\nCraig's largest resident memory under load: {craig_rss:.0f} MiB (all its processes)")
    print(f"wrk's own CPU: at most {wrk_cpu:.0f}% of one core per run")
    print(
        "CPU, PostgreSQL, machine: CPU in % of one core over Craig's run, then over the bare twin's: the "
        "server's processes, PostgreSQL's processes, the whole machine (200% is two cores busy)"
    )
    if "me" in results and highest_craig:
        bare_me = median([r.wrk.requests_per_second for r in results["me"]["bare"]])
        print(
            f"wrk headroom: the bare GET /v1/me reached {bare_me:.0f} req/s, {bare_me / highest_craig:.1f}x "
            f"Craig's best scenario that reaches the database ({highest_craig:.0f} req/s)"
        )


if __name__ == "__main__":
    main()
