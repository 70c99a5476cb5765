"""The dependency set is consistent: what is installed meets every requirement (``pip check``),
every runtime dependency is bounded below the next major release, and constraints.txt pins a
version inside those bounds."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

pytestmark = pytest.mark.unit

CHECKOUT = Path(__file__).resolve().parents[2]


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]
    return [Requirement(line) for line in project["dependencies"]]


def pins() -> dict[str, Version]:
    lines = (CHECKOUT / "constraints.txt").read_text().splitlines()
    pinned = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {canonicalize_name(name): Version(version) for name, version in pinned}


def test_pip_check_finds_no_broken_requirement_in_the_project_venv() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "check", "--disable-pip-version-check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("requirement", runtime_requirements(), ids=str)
def test_a_runtime_dependency_has_both_bounds_and_its_pin_lies_between(requirement: Requirement) -> None:
    lower = [s for s in requirement.specifier if s.operator == ">="]
    upper = [s for s in requirement.specifier if s.operator == "<"]
    assert lower and upper, f"{requirement} needs a lower (>=) and an upper (<) bound"
    ceiling = Version(upper[0].version)
    floor = Version(lower[0].version)
    assert ceiling.release[1:] == (0,) * len(ceiling.release[1:]) or ceiling.major == 0, (
        f"{requirement}: the upper bound should be the next major release"
    )
    assert floor < ceiling
    pinned = pins().get(canonicalize_name(requirement.name))
    assert pinned is not None, f"constraints.txt pins no version of {requirement.name}"
    assert requirement.specifier.contains(pinned), f"constraints.txt pins {requirement.name}=={pinned}"
