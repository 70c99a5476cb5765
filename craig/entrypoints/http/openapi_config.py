"""The OpenAPI configuration: operation ids, the document's completion, the description.

``operationId`` is the handler's name in lower camel case (``open_case`` -> ``openCase``): handler
names are verb + noun, and a test holds every operation to it. The JSON served at
``/api-doc/openapi.json`` is Litestar's document completed by
:func:`craig.entrypoints.http.openapi_document.complete`, made once per app.
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.config import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme, Tag
from litestar.routes import HTTPRoute

from craig.entrypoints.http.api_contract import contract_of
from craig.entrypoints.http.openapi_document import Routes, complete

DOCUMENT_PATH = "/api-doc"


def camel_operation_id(route_handler: HTTPRouteHandler, http_method: Any, path_components: Any) -> str:
    head, *rest = route_handler.handler_name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def route_facts(app: Any) -> Routes:
    facts = {}
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            for method in handler.http_methods:
                facts[(route.path_format, str(method).lower())] = (contract_of(handler.opt), handler.opt)
    return facts


class CompletedJsonRenderPlugin(JsonRenderPlugin):
    """Serves the completed document (computed on first request, then kept)."""

    def __init__(self) -> None:
        super().__init__()
        self._document: bytes | None = None

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        if self._document is None:
            self._document = self.render_json(request, complete(openapi_schema, route_facts(request.app)))
        return self._document


TAGS = [
    Tag(name="identity", description="Who the token says you are."),
    Tag(name="cases", description="Cases and their case workers."),
    Tag(name="contacts", description="Contacts recorded on a case."),
    Tag(name="attachments", description="Files attached to a contact."),
    Tag(name="placements", description="Foster homes and placements."),
    Tag(name="exchange", description="Partner agencies, transactions and send jobs."),
    Tag(name="rule sets", description="Triage rule sets."),
    Tag(name="intake", description="The public referral form."),
    Tag(name="problems", description="What each problem type means."),
    Tag(name="operations", description="Health and metrics."),
]


def openapi_config(description: str) -> OpenAPIConfig:
    return OpenAPIConfig(
        title="Craig",
        version="1",
        description=description,
        path=DOCUMENT_PATH,
        render_plugins=[CompletedJsonRenderPlugin()],
        operation_id_creator=camel_operation_id,
        tags=TAGS,
        components=Components(
            security_schemes={"BearerAuth": SecurityScheme(type="http", scheme="bearer", bearer_format="JWT")}
        ),
    )
