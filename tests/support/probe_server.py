"""The API with the probe route on PostgreSQL, in its own process:
``python -m tests.support.probe_server PG_URL PORT [CLAIM_TTL_SECONDS [WAIT_CEILING_SECONDS]]``.

Used where a test or benchmark needs a server it can kill (SIGKILL) or measure from outside.
Its files (attachments, generated secrets) go to ``CRAIG_DATA_DIR``, a folder the caller
removes: a killed server cannot remove one of its own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import uvicorn

from craig.entrypoints.http.app import create_app
from craig.entrypoints.settings import IdempotencySettings
from tests.support import probe
from tests.support.apps import make_container, make_settings


def main(pg_url: str, port: int, claim_ttl_seconds: float = 30.0, wait_ceiling_seconds: float = 10.0) -> None:
    policy = IdempotencySettings(
        claim_ttl_seconds=claim_ttl_seconds, wait_ceiling_seconds=min(wait_ceiling_seconds, claim_ttl_seconds)
    )
    settings = make_settings("postgres", Path(os.environ["CRAIG_DATA_DIR"]), pg_url, idempotency=policy)
    app = create_app(make_container(settings), extra_v1_routes=probe.ROUTES)
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *(float(a) for a in sys.argv[3:5]))
