"""An embedded server whose data directory's path is too long for a unix socket keeps its socket
in a folder of its own under /tmp, under a name anyone can predict: a folder there that another
user made (or a link) is refused, a restart keeps the folder, and a server that will not start
again can remove it."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from craig.adapters.postgres.embedded import EmbeddedPostgres
from craig.domain.constants import EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
def server() -> Iterator[EmbeddedPostgres]:
    root = Path(tempfile.mkdtemp(prefix="craig-test-socket-dir-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root / ("d" * EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS), fsync="off")
    assert server.socket_dir != server.data_dir and str(server.socket_dir).startswith("/tmp/craig-pg-")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        if server.socket_dir.is_symlink():
            server.socket_dir.unlink()
        shutil.rmtree(server.socket_dir, ignore_errors=True)


def test_a_restart_keeps_the_folder_and_removing_it_after_the_last_stop_leaves_nothing(
    server: EmbeddedPostgres,
) -> None:
    for _ in range(2):
        server.start()
        assert any(server.socket_dir.iterdir())
        server.stop()
        assert server.socket_dir.is_dir()  # kept between a stop and the next start
    server.remove_socket_dir()
    assert not server.socket_dir.exists()
    server.start()  # made again
    server.remove_socket_dir()  # not while it runs
    assert server.socket_dir.is_dir()


def test_a_folder_holding_anything_else_is_not_removed(server: EmbeddedPostgres) -> None:
    server.start()
    (server.socket_dir / "someone-elses").write_text("kept")
    server.stop()
    server.remove_socket_dir()
    assert (server.socket_dir / "someone-elses").read_text() == "kept"


def test_a_link_in_place_of_the_folder_is_refused(server: EmbeddedPostgres, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    server.socket_dir.symlink_to(target)
    with pytest.raises(RuntimeError, match="not a folder"):
        server.start()
    assert not server.is_running() and not any(target.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a folder that another user owns")
def test_a_folder_another_user_made_first_is_refused_and_its_links_are_not_followed(
    server: EmbeddedPostgres, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("root's")
    server.socket_dir.mkdir(mode=0o777)
    (server.socket_dir / "x").symlink_to(victim)
    nobody = pwd.getpwnam("nobody")
    os.chown(server.socket_dir, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(RuntimeError, match="owned by another user"):
        server.start()
    assert not server.is_running() and victim.stat().st_uid == 0


def test_a_folder_swapped_for_a_link_once_opened_is_not_followed(
    server: EmbeddedPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's owner (the server's user) may swap it for a link at any moment, even between
    the check and the change of its mode: both go through one descriptor, opened without
    following a link, so the change lands on the folder that was checked."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    victim.chmod(0o755)
    server.socket_dir.mkdir(mode=0o755)
    aside = server.socket_dir.with_name(server.socket_dir.name + ".aside")
    fstat = os.fstat

    def swapped_then_fstat(fd: int) -> os.stat_result:
        monkeypatch.setattr(os, "fstat", fstat)
        server.socket_dir.rename(aside)
        server.socket_dir.symlink_to(victim)
        return fstat(fd)

    monkeypatch.setattr(os, "fstat", swapped_then_fstat)
    try:
        server._secure_shared_socket_dir()
        assert victim.stat().st_mode & 0o777 == 0o755
        assert aside.stat().st_mode & 0o777 == 0o700
    finally:
        server.socket_dir.unlink()
        aside.rmdir()


def test_a_stale_lock_left_by_a_dead_server_is_removed_and_the_server_starts(server: EmbeddedPostgres) -> None:
    server.start()
    server.stop()
    lock = server.socket_dir / ".s.PGSQL.5432.lock"
    lock.write_text("999999999\n")  # a pid no process has
    (server.socket_dir / ".s.PGSQL.5432").write_text("")
    server.start()
    assert server.is_running() and lock.read_text().split("\n", 1)[0].strip() != "999999999"


def test_stale_locks_are_never_removed_behind_a_link(server: EmbeddedPostgres, tmp_path: Path) -> None:
    """A link swapped in for the folder after its check leads nowhere: files of the same names
    elsewhere stay."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".s.PGSQL.5432.lock").write_text("999999999\n")
    (elsewhere / ".s.PGSQL.5432").write_text("")
    server.socket_dir.symlink_to(elsewhere)
    server._remove_stale_lock_files()
    assert sorted(p.name for p in elsewhere.iterdir()) == [".s.PGSQL.5432", ".s.PGSQL.5432.lock"]
