"""Only Litestar's own 500 for a body cut short by a disconnect is answered as the 499 of a
client gone: any other 500 met after the client left is still a defect, logged with its incident."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Request
from litestar.exceptions import HTTPException, InternalServerException

from craig.entrypoints.http.problems import CLIENT_CLOSED_REQUEST, CLIENT_GONE_KEY, EXCEPTION_HANDLERS

pytestmark = pytest.mark.unit


def _request(gone: bool) -> Request[Any, Any, Any]:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/v1/cases",
        "raw_path": b"/v1/cases",
        "root_path": "",
        "scheme": "http",
        "query_string": b"",
        "headers": [(b"host", b"craig")],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
        "state": {},
    }
    if gone:
        scope[CLIENT_GONE_KEY] = True
    return Request(scope)  # type: ignore[arg-type]


def test_only_the_disconnect_500_of_a_client_gone_is_a_499() -> None:
    handle = EXCEPTION_HANDLERS[HTTPException]
    disconnected = InternalServerException("client disconnected prematurely")
    assert handle(_request(gone=True), disconnected).status_code == CLIENT_CLOSED_REQUEST
    assert handle(_request(gone=False), disconnected).status_code == 500
    defect = InternalServerException()  # e.g. a dependency that returned what its signature refuses
    answered = handle(_request(gone=True), defect)
    assert answered.status_code == 500 and b"incident" in answered.content
