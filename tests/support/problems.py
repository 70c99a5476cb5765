"""Problem bodies in tests: the code at the end of the absolute ``type`` URI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

TYPE_PATH = "/problems/"


def problem_code(body: Mapping[str, Any]) -> str:
    """``http://host:port/problems/not-found`` -> ``not-found`` (the type must be absolute)."""
    parts = urlsplit(str(body["type"]))
    assert parts.scheme in ("http", "https") and parts.netloc, body["type"]
    assert parts.path.startswith(TYPE_PATH), body["type"]
    return parts.path.removeprefix(TYPE_PATH)
