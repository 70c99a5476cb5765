"""The README's "A day of casework", run as written (bash, curl, jq) against `craig serve` on the
embedded profile: from a public referral to a closed case."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.e2e.test_serve_embedded import CRAIG, _env, _wait_ready, serve
from tests.support.apps import free_port

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- casework-walkthrough:"


def walkthrough() -> str:
    text = README.read_text()
    start = text.index(MARKER)
    match = re.compile(r"```sh\n(.*?)\n```", re.DOTALL).search(text, start)
    assert match is not None, "the README lost its casework walk-through"
    return match.group(1)


def test_the_readme_walkthrough_runs_against_craig_serve(tmp_path: Path) -> None:
    for tool in ("bash", "curl", "jq"):
        if shutil.which(tool) is None:
            pytest.skip(f"the walk-through needs {tool}")
    # A private folder, not pytest's tmp_path: pytest resets the mode of its base folder, which
    # the embedded PostgreSQL (run as another user) must traverse, as other sessions prune it.
    root = Path(tempfile.mkdtemp(prefix="craig-casework-day-"))
    root.chmod(0o755)
    data_dir = root / "craig-data"
    port = free_port()
    log = tmp_path / "serve.log"
    process = serve(data_dir, port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, process, log)
        env = {**_env(data_dir), "BASE": base, "CRAIG": CRAIG}
        ran = subprocess.run(
            ["bash", "-c", walkthrough()], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
        )
        assert ran.returncode == 0, f"stdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"
        lines = ran.stdout.splitlines()
        assert lines[-1].startswith("a day of casework: case ") and lines[-1].endswith(" closed")
        assert (
            '{"status":"closed"' in ran.stdout
            and '"close_reason":"Tom is home; the family engages with support"' in ran.stdout
        )
        assert '{"title":"Tom Okafor, age 4","version":3}' in ran.stdout
        assert '{"status":"ended","end_reason":"reunified"}' in ran.stdout
        assert 'craig_referrals_unscreened{priority="high"} 0.0' in ran.stdout
        assert "[intake queue]" in ran.stdout and "overdue" in ran.stdout
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(root, ignore_errors=True)
