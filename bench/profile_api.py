"""Where one ``craig serve`` spends its CPU under load: py-spy on the server while wrk loads one
scenario of ``bench.api``.

It starts the server as ``bench.api`` does (embedded adapter set on a scratch PostgreSQL, one
process), seeds it, loads the scenario with wrk and samples the server with py-spy meanwhile,
then prints the functions that hold the most samples: by own samples (the function itself was
running) and by inclusive samples (it was on the stack), grouped by package. It measures where
the time goes, not how fast anything is: read ``bench.api`` for that.

py-spy is not one of Craig's dependencies: ``pip install py-spy`` first (it needs ptrace, so
run as root or with ``kernel.yama.ptrace_scope=0``).

    .venv/bin/python -m bench.profile_api --scenario get_case
    .venv/bin/python -m bench.profile_api --scenario open_case --duration 15 --top 40
    .venv/bin/python -m bench.profile_api --scenario me --raw /tmp/me.txt   # keep the stacks
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from bench._api_server import craig_server, require_wrk, run_wrk
from bench._services import exit_cleanly_on_sigterm, postgres_database
from bench.api import SCENARIOS, craig_token, prepare

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")


def package_of(path: str) -> str:
    """A short name for where a frame's file lives: ``craig``, ``sqlalchemy``, ``<stdlib>``..."""
    marker = "site-packages/"
    if marker in path:
        return path.split(marker, 1)[1].split("/", 1)[0]
    if "/craig/" in path:
        return "craig"
    if "/bench/" in path:
        return "bench"
    return "<stdlib>" if "/lib/python" in path else "<other>"


def frame_name(frame: str) -> tuple[str, str]:
    """``(package, "function (file)")`` for one py-spy frame."""
    match = _FRAME.match(frame)
    if match is None:
        return "<other>", frame
    path = match.group("file")
    short = "/".join(path.split("/")[-2:])
    return package_of(path), f"{match.group('function')} ({short})"


def summarize(raw: str, top: int) -> str:
    """The report of py-spy's ``--format raw`` output (one ``frame;frame;... count`` per line)."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    packages: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_name(frame) for frame in stack.split(";") if frame]
        if not frames:
            continue
        total += count
        package, leaf = frames[-1]
        own[leaf] += count
        packages[package] += count
        for name in {name for _, name in frames}:
            inclusive[name] += count
    if not total:
        return "no samples (is py-spy allowed to attach? run as root)"
    lines = [f"{total} samples", "", "own samples by package:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in packages.most_common()]
    lines += ["", f"top {top} functions by own samples:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in own.most_common(top)]
    lines += ["", f"top {top} functions by inclusive samples:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="get_case", choices=[s.name for s in SCENARIOS])
    parser.add_argument("--duration", type=int, default=10, help="seconds of load and sampling (default 10)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (default 32)")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second (default 250)")
    parser.add_argument("--top", type=int, default=30, help="functions listed (default 30)")
    parser.add_argument("--raw", type=Path, help="also keep py-spy's raw stacks in this file")
    args = parser.parse_args()
    require_wrk()
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        sys.exit("this benchmark needs py-spy: pip install py-spy")
    exit_cleanly_on_sigterm()
    scenario = next(s for s in SCENARIOS if s.name == args.scenario)
    with postgres_database() as url, craig_server(url) as server:
        target = prepare(server.base_url, (server.pid,), craig_token(server))
        path, script = scenario.load(target)
        run_wrk(target.base_url + path, connections=args.connections, duration=2, script=script)  # warm up
        raw = Path(tempfile.mkstemp(prefix="craig-profile-", suffix=".txt")[1])
        load = threading.Thread(
            target=run_wrk,
            args=(target.base_url + path,),
            kwargs={"connections": args.connections, "duration": args.duration + 2, "script": script},
        )
        load.start()
        try:
            subprocess.run(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(server.pid),
                    "--duration",
                    str(args.duration),
                    "--rate",
                    str(args.rate),
                    "--format",
                    "raw",
                    "--nonblocking",
                    "--full-filenames",
                    "--output",
                    str(raw),
                ],
                check=True,
                capture_output=True,
            )
        finally:
            load.join()
        text = raw.read_text()
        if args.raw:
            shutil.copyfile(raw, args.raw)
        raw.unlink()
    print(f"{scenario.label}: {args.duration} s under wrk -c{args.connections}, py-spy at {args.rate} Hz")
    print(summarize(text, args.top))


if __name__ == "__main__":
    main()
