"""``HEAD`` in the outermost layer, without a server: the application sees the ``GET`` it stands
for, and no content leaves it however the answer is sent (uvicorn also drops it; another ASGI
server may not)."""

from __future__ import annotations

from typing import Any

from craig.entrypoints.http.request_context import RequestContext


def _app(seen: list[str], chunks: list[bytes], allow: bytes | None = None) -> Any:
    async def app(scope: Any, _receive: Any, send: Any) -> None:
        seen.append(scope["method"])
        headers = [(b"content-length", str(sum(map(len, chunks))).encode())]
        if allow is not None:
            headers.append((b"allow", allow))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for at, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": at < len(chunks) - 1})

    return app


async def _call(method: str, app: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": "/x", "headers": [], "client": ("127.0.0.1", 1)}
    await RequestContext(app, trusted_proxies="")(scope, receive, send)
    return sent


async def test_head_runs_the_get_and_sends_its_headers_without_content() -> None:
    seen: list[str] = []
    sent = await _call("HEAD", _app(seen, [b"first ", b"second"]))
    assert seen == ["GET"]
    start, *bodies = sent
    assert start["status"] == 200 and (b"content-length", b"12") in start["headers"]
    assert [(m["body"], m["more_body"]) for m in bodies] == [(b"", True), (b"", False)]


async def test_get_keeps_its_content() -> None:
    seen: list[str] = []
    sent = await _call("GET", _app(seen, [b"first ", b"second"]))
    assert seen == ["GET"]
    assert b"".join(m["body"] for m in sent[1:]) == b"first second"


async def test_an_allow_header_that_names_get_names_head_too() -> None:
    for given, answered in (
        (b"OPTIONS, GET", b"OPTIONS, GET, HEAD"),
        (b"GET,POST", b"GET, HEAD, POST"),
        (b"OPTIONS, POST", b"OPTIONS, POST"),  # no GET, so no HEAD
        (b"GET, HEAD", b"GET, HEAD"),  # named already
    ):
        sent = await _call("OPTIONS", _app([], [b""], allow=given))
        assert dict(sent[0]["headers"])[b"allow"] == answered, given
