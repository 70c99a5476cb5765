"""Craig as a deployment gets it: the wheel, installed into a fresh virtual environment that
lives outside the checkout.

A real ``pip install craig-*.whl`` downloads about 280 MB of dependencies (about a minute here,
and it needs the registry). The test gets the same environment offline in a few seconds:

- the wheel is built from a copy of ``pyproject.toml``, ``README.md`` and ``craig/`` (so the
  build leaves nothing in the checkout), without build isolation (setuptools is a dev
  dependency), and installed with ``--no-deps`` into a new venv;
- its dependencies are the distributions the *wheel's own* ``Requires-Dist`` needs, followed
  transitively through the project venv's metadata. Each one's top-level files (from its
  ``RECORD``) are symlinked into one folder that a ``.pth`` file puts on the new venv's path.
  Nothing else of the project venv is visible: not the editable Craig, not the test tools. A
  module the code imports but the wheel does not declare fails to import there.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from pathlib import Path

import attrs
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

CHECKOUT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "craig")


@attrs.frozen
class InstalledWheel:
    wheel: Path
    venv: Path
    #: Where the test processes run: a folder outside the checkout.
    workdir: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def craig(self) -> Path:
        return self.venv / "bin" / "craig"

    @property
    def site_packages(self) -> Path:
        return _site_packages(self.venv)


def build_wheel(root: Path) -> Path:
    """Build Craig's wheel from a copy of its sources under ``root``; return its path."""
    source = root / "source"
    source.mkdir(parents=True)
    for name in SOURCES:
        origin = CHECKOUT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    dist = root / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--disable-pip-version-check", "--quiet", "-w", str(dist), str(source)], cwd=root)  # fmt: skip
    (wheel,) = dist.glob("craig-*.whl")
    return wheel


def install_wheel(wheel: Path, root: Path) -> InstalledWheel:
    """A new venv under ``root`` holding the wheel and, through a ``.pth``, its dependencies."""
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
          "--no-index", "--disable-pip-version-check", "--quiet", str(wheel)], cwd=root)  # fmt: skip
    dependencies = root / "dependencies"
    dependencies.mkdir()
    for dist in runtime_closure(wheel_requirements(wheel)):
        for entry in top_level_entries(dist):
            link = dependencies / entry
            if not link.exists():
                link.symlink_to(Path(str(dist.locate_file(entry))))
    (_site_packages(venv) / "craig-test-dependencies.pth").write_text(f"{dependencies}\n")
    workdir = root / "work"
    workdir.mkdir()
    return InstalledWheel(wheel=wheel, venv=venv, workdir=workdir)


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of the wheel's metadata."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(name).decode())
    return metadata.get_all("Requires-Dist") or []


def runtime_closure(requirements: list[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``requirements`` need, transitively (extras and markers honoured)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()
    todo = [(Requirement(line), "") for line in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        dist = found.get(name) or importlib.metadata.distribution(requirement.name)
        found[name] = dist
        for wanted in ("", *sorted(requirement.extras)):
            if (name, wanted) not in done:
                done.add((name, wanted))
                todo.extend((Requirement(line), wanted) for line in dist.requires or [])
    return list(found.values())


def top_level_entries(dist: importlib.metadata.Distribution) -> set[str]:
    """The names a distribution installed directly in site-packages (packages, modules, its dist-info)."""
    if dist.files is None:
        raise RuntimeError(f"{dist.metadata['Name']} has no RECORD: cannot tell which files are its own")
    return {f.parts[0] for f in dist.files if f.parts[0] not in ("..", "__pycache__")}


def clean_environment(**variables: str) -> dict[str, str]:
    """The process environment without Craig's settings and without anything that would put the
    checkout on ``sys.path``."""
    drop = ("CRAIG_", "PYTHON", "VIRTUAL_ENV")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**clean, **variables}


def _site_packages(venv: Path) -> Path:
    relative = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    return venv / relative


def _run(command: list[str], *, cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=clean_environment(), timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
