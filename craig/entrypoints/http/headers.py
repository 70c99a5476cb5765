"""Headers every response carries, errors included (HSTS and the other security headers)."""

from __future__ import annotations

from litestar.datastructures import MutableScopeHeaders
from litestar.types import Message, Scope

HSTS = "max-age=31536000; includeSubDomains"


async def security_headers(message: Message, scope: Scope) -> None:
    """``before_send`` hook: runs for every response the app sends, 404s and 500s included."""
    if message["type"] == "http.response.start":
        headers = MutableScopeHeaders.from_message(message)
        headers["Strict-Transport-Security"] = HSTS
        headers.setdefault("X-Content-Type-Options", "nosniff")
