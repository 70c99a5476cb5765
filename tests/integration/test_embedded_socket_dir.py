"""An embedded server whose data directory's path is too long for a unix socket keeps its socket
in a folder of its own under /tmp; stopping the server removes that folder, so runs leave none."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.domain.constants import EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_stopping_removes_the_socket_folder_and_starting_makes_it_again() -> None:
    root = Path(tempfile.mkdtemp(prefix="craig-test-socket-dir-"))
    root.chmod(0o755)
    data_dir = root / ("d" * EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS)
    server = EmbeddedPostgres(data_dir, fsync="off")
    assert server.socket_dir != server.data_dir and str(server.socket_dir).startswith("/tmp/craig-pg-")
    try:
        for _ in range(2):  # a restart finds its folder again
            server.start()
            assert server.socket_dir.is_dir() and any(server.socket_dir.iterdir())
            server.stop()
            assert not server.socket_dir.exists()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(server.socket_dir, ignore_errors=True)


def test_a_socket_folder_holding_anything_else_is_left_alone() -> None:
    root = Path(tempfile.mkdtemp(prefix="craig-test-socket-dir-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / ("d" * EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS), fsync="off")
    try:
        server.start()
        (server.socket_dir / "someone-elses").write_text("kept")
        server.stop()
        assert (server.socket_dir / "someone-elses").read_text() == "kept"
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(server.socket_dir, ignore_errors=True)
