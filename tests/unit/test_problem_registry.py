"""One registry of problem types: every code Craig can answer is in it, with the status answered."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from litestar.datastructures import State

import craig
from craig.domain.errors import DomainError
from craig.entrypoints.http.origin import TRUSTED_PROXIES_STATE, request_origin
from craig.entrypoints.http.problem_types import BY_CODE, PROBLEM_TYPES
from craig.entrypoints.http.problems import domain_status
from craig.ports.errors import PortError

CODE = re.compile(r"[a-z]+(?:[-_][a-z]+)+|upstream|unauthorized|forbidden|conflict")
ANSWERING = {"ProblemException", "_answer", "problem", "problem_bytes"}


def _subclasses(base: type) -> list[type]:
    found = []
    for sub in base.__subclasses__():
        found.extend([sub, *_subclasses(sub)])
    return found


def test_codes_are_unique_and_statuses_are_errors() -> None:
    assert len(BY_CODE) == len(PROBLEM_TYPES)
    assert all(400 <= p.status <= 599 and p.title and p.meaning and p.action for p in PROBLEM_TYPES)


def test_every_error_class_code_is_registered_with_the_status_it_is_answered_with() -> None:
    for module in pkgutil.walk_packages(craig.__path__, "craig."):
        if not module.name.startswith("craig.migrations"):  # Alembic scripts run only under Alembic
            importlib.import_module(module.name)
    for kind in _subclasses(DomainError) + _subclasses(PortError):
        code = kind.__dict__.get("code")
        if code is None or code == "domain-error":
            continue
        assert code in BY_CODE, f"{kind.__module__}.{kind.__name__}: add {code!r} to problem_types"
        if issubclass(kind, DomainError):
            assert domain_status(kind.__new__(kind)) == BY_CODE[code].status, code


def test_every_code_the_http_layer_answers_is_registered() -> None:
    http = Path(craig.__file__).parent / "entrypoints" / "http"
    for source in http.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name not in ANSWERING:
                continue
            for arg in node.args[:4]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and CODE.fullmatch(arg.value):
                    assert arg.value in BY_CODE, f"{source.name}: {arg.value!r} is not in problem_types"


def _scope(headers: dict[str, str], peer: str, trusted: str = "") -> dict[str, object]:
    class App:
        state = State({TRUSTED_PROXIES_STATE: trusted})

    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "scheme": "http", "headers": raw, "client": (peer, 1), "server": ("10.0.0.5", 8000),
            "litestar_app": App()}  # fmt: skip


@pytest.mark.parametrize(
    ("headers", "peer", "trusted", "origin"),
    [
        ({"Host": "craig.example"}, "203.0.113.9", "", "http://craig.example"),
        ({"Host": "craig.example", "X-Forwarded-Host": "evil.example"}, "203.0.113.9", "", "http://craig.example"),
        (
            {"Host": "10.0.0.5:8000", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example"},
            "10.0.0.1",
            "10.0.0.0/8",
            "https://api.example",
        ),
        ({"Host": "a b"}, "203.0.113.9", "", "http://10.0.0.5:8000"),
        ({}, "203.0.113.9", "", "http://10.0.0.5:8000"),
        ({"Host": "[::1]:8000"}, "203.0.113.9", "", "http://[::1]:8000"),
    ],
)
def test_origin(headers: dict[str, str], peer: str, trusted: str, origin: str) -> None:
    assert request_origin(_scope(headers, peer, trusted)) == origin  # type: ignore[arg-type]
