"""``GET /problems/{code}``: the page every problem ``type`` URI resolves to (public, no token).

A short HTML page, made from the registry, saying what the problem means and what to do.
"""

from __future__ import annotations

from html import escape

from litestar import MediaType, Response, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath

from craig.entrypoints.http.problem_types import BY_CODE, ProblemType

_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{title} - Craig problem type</title></head>
<body>
<h1>{title}</h1>
<p>HTTP status <strong>{status}</strong>, problem type <code>{code}</code>.</p>
<h2>What it means</h2>
<p>{meaning}</p>
<h2>What to do</h2>
<p>{action}</p>
<p>Every error Craig answers is an RFC 9457 <code>application/problem+json</code> body whose
<code>type</code> is a page like this one. See the <a href="/api-doc/openapi.json">OpenAPI document</a>.</p>
</body>
</html>
"""


def render(problem: ProblemType) -> str:
    return _PAGE.format(
        title=escape(problem.title),
        status=problem.status,
        code=escape(problem.code),
        meaning=escape(problem.meaning),
        action=escape(problem.action),
    )


@get(
    "/problems/{code:str}",
    media_type=MediaType.HTML,
    tags=["problems"],
    summary="What a problem type means",
    description=(
        "Public (no token). The page a problem's `type` URI resolves to: the problem's title, status, "
        "what it means and what to do. 404 for a code Craig never answers."
    ),
    security=[],
    operation_id="getProblemType",
    cache_control=None,
)
async def problem_page(code: FromPath[str]) -> Response[str]:
    problem = BY_CODE.get(code)
    if problem is None:
        raise NotFoundException(f"no problem type is called {code[:100]!r}")
    return Response(render(problem), media_type=MediaType.HTML, headers={"Cache-Control": "public, max-age=3600"})
