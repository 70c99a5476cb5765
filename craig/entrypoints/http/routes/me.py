"""``GET /v1/me``: who the token says you are."""

from __future__ import annotations

from litestar import get

from craig.entrypoints.http.dependencies import Me
from craig.entrypoints.http.routes.case_views import MeView, me_view


@get("/me", tags=["identity"], summary="The authenticated principal", operation_id="getMe")
async def me(principal: Me) -> MeView:
    """Your subject, name and role, as the token states them."""
    return me_view(principal)
