"""``GET /v1/me``: who the token says you are."""

from __future__ import annotations

from litestar import get

from craig.entrypoints.http.dependencies import Me


@get("/me", tags=["identity"], summary="The authenticated principal")
async def me(principal: Me) -> dict[str, str]:
    return {"sub": str(principal.sub), "name": principal.name, "role": str(principal.role)}
