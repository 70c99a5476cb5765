"""The API with the probe route, on PostgreSQL, for bench.idempotency (run in its own process)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import uvicorn

from craig.entrypoints.http.app import create_app
from tests.support import probe
from tests.support.apps import test_container, test_settings


def main(pg_url: str, port: int) -> None:
    container = test_container(test_settings("postgres", Path(tempfile.mkdtemp()), pg_url))
    app = create_app(container, extra_v1_routes=probe.ROUTES)
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
