"""RFC 9457 problem details: every error Craig answers is ``application/problem+json``.

Entrypoints translate domain and port errors here (ARCHITECTURE rule 3); nothing else ever
reaches the client: no HTML page, no traceback.

Only an unavailable dependency is a retryable 503. Anything unexpected (an unhandled exception,
a :class:`~craig.ports.errors.Defect`, any other port error) is a 500 ``internal-error`` whose
body carries an ``incident`` id; the log line with the traceback carries the same id.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import ClientException, HTTPException, NotAuthorizedException, ValidationException
from litestar.status_codes import HTTP_400_BAD_REQUEST, HTTP_500_INTERNAL_SERVER_ERROR
from litestar.types import ExceptionHandlersMap

from craig.domain.attachments import UnsupportedUploadType, UploadTooLarge
from craig.domain.errors import Conflict, DomainError, Forbidden, InvalidInput, NotFound
from craig.domain.fingerprint import is_json_media_type
from craig.domain.versions import StaleVersion
from craig.entrypoints.http.field_errors import BODY_PARAMETER, for_field, from_validation
from craig.entrypoints.http.head import answers_head
from craig.entrypoints.http.origin import request_origin
from craig.entrypoints.http.problem_types import problem_type
from craig.entrypoints.http.validators import etag
from craig.ports.errors import ConstraintViolation, InvalidData, PortError, TransientConflict, Unavailable

log = structlog.get_logger(__name__)

PROBLEM_JSON = "application/problem+json"
#: Set in the scope (by the request context) when the client disconnected before an answer began (its body unfinished):
#: such a request is counted and logged with nginx's 499 (client closed request), not as a 500.
CLIENT_GONE_KEY = "craig.client_gone"
CLIENT_CLOSED_REQUEST = 499
#: What Litestar's 500 says when the client disconnected before the end of the body.
_CLIENT_DISCONNECTED = "client disconnected prematurely"
TYPE_PATH = "/problems/"


def _title(status: int, code: str) -> str:
    known = problem_type(code)
    if known is not None:
        return known.title
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


class ProblemException(HTTPException):
    """Raise from anywhere in the HTTP layer to answer a specific problem."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail=detail, status_code=status, headers=dict(headers or {}))
        self.code = code
        self.extra = dict(extra or {})


def problem(
    request: Request[Any, Any, Any],
    status: int,
    code: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Response[bytes]:
    """The problem answered to ``request``; ``instance`` is the request's path."""
    return Response(
        content=problem_bytes(
            status, code, detail, {"instance": request.url.path, **(extra or {})}, origin=request_origin(request.scope)
        ),
        status_code=status,
        media_type=PROBLEM_JSON,
        headers=dict(headers or {}),
    )


def problem_type_uri(origin: str, code: str) -> str:
    return f"{origin}{TYPE_PATH}{code}"


def problem_bytes(status: int, code: str, detail: str, extra: Mapping[str, Any] | None = None, *, origin: str) -> bytes:
    """The body of a problem (also for ASGI middleware that answers before the router). ``type``
    is absolute: ``origin`` is the one the client reached (see :func:`request_origin`)."""
    body: dict[str, Any] = {
        "type": problem_type_uri(origin, code),
        "title": _title(status, code),
        "status": status,
        "detail": detail,
    }
    body.update(extra or {})
    return msgspec.json.encode(body)


#: The detail of a body nested deeper than the decoder goes.
TOO_DEEPLY_NESTED = "the body is nested too deeply to be read"


class ProblemRequest(Request[Any, Any, Any]):
    """Litestar's request, with two differences where a JSON body is read.

    A body sent as anything but JSON (``text/plain``, a form, no ``Content-Type`` at all) is a
    415 ``unsupported-media-type``, not read as JSON all the same: a browser sends such bodies
    cross-site without asking the server first (a CORS "simple request"), so reading them would
    let any web page post to the anonymous intake form with its visitors' browsers.

    A body nested too deeply to decode is the client's fault: a 400 ``invalid-request`` like any
    other unreadable body, not a 500.

    msgspec stops at the interpreter's recursion limit with a ``RecursionError``, which Litestar
    (it maps only ``msgspec.DecodeError``) lets through. It is caught here, where the request body
    is decoded, and not by an exception handler for every ``RecursionError``: one raised by
    Craig's own code is a defect and stays a 500 with an incident. Nor is every body scanned
    for its depth first: the decoder already measures it, at no extra cost.
    """

    async def json(self) -> Any:
        media_type = self.content_type[0]
        if not is_json_media_type(media_type):
            sent = f"Content-Type {media_type!r}" if media_type else "no Content-Type"
            raise HTTPException(
                status_code=415,
                detail=f"the body must be JSON, sent as Content-Type application/json ({sent} was sent)",
            )
        try:
            return await super().json()
        except RecursionError:
            raise ClientException(TOO_DEEPLY_NESTED) from None

    async def msgpack(self) -> Any:
        try:
            return await super().msgpack()
        except RecursionError:
            raise ClientException(TOO_DEEPLY_NESTED) from None


def internal_error(
    request: Request[Any, Any, Any],
    error: BaseException,
    event: str,
    *,
    status: int = HTTP_500_INTERNAL_SERVER_ERROR,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> Response[bytes]:
    """The 5xx for an unexpected ``error``: an incident id in the body and in the log line that
    holds the traceback; nothing of the error itself reaches the client."""
    incident = uuid.uuid4().hex
    log.error(
        event,
        incident=incident,
        status=status,
        path=request.url.path,
        method="HEAD" if answers_head(request.scope) else request.method,
        error_type=type(error).__name__,
        exc_info=error,
        **context,
    )
    return problem(
        request,
        status,
        "internal-error" if status == HTTP_500_INTERNAL_SERVER_ERROR else "http-error",
        f"an internal error occurred; quote incident {incident} when you report it",
        headers=headers,
        extra={"incident": incident},
    )


_DOMAIN_STATUS: list[tuple[type[DomainError], int]] = [
    (UploadTooLarge, 413),  # before InvalidInput, whose kinds they are
    (UnsupportedUploadType, 415),
    (StaleVersion, 412),
    (NotFound, 404),
    (Forbidden, 403),
    (Conflict, 409),
    (InvalidInput, 422),
]


def domain_status(error: DomainError) -> int:
    """The registry's status for the error's code; by its kind for a code not (yet) registered."""
    known = problem_type(error.code)
    if known is not None:
        return known.status
    return next((code for kind, code in _DOMAIN_STATUS if isinstance(error, kind)), 422)


def _parameters(request: Request[Any, Any, Any]) -> frozenset[str]:
    handler = request.scope.get("route_handler")
    fields = getattr(getattr(handler, "parsed_fn_signature", None), "parameters", {})
    return frozenset(name for name in fields if name != BODY_PARAMETER)


def _domain(request: Request[Any, Any, Any], error: DomainError) -> Response[bytes]:
    extra = dict(getattr(error, "problem_extra", None) or {})
    field = getattr(error, "field", None)
    if isinstance(field, str):
        fault = for_field(field, error.code, error.detail, _parameters(request))
        extra["errors"] = [msgspec.structs.asdict(fault)]
    headers = None
    if isinstance(error, StaleVersion):
        # The current ETag, so the client can read what changed and decide.
        current = etag(error.current_version)
        headers, extra = {"ETag": current}, {**extra, "current_etag": current}
    return problem(request, domain_status(error), error.code, error.detail, extra=extra, headers=headers)


def _port(request: Request[Any, Any, Any], error: PortError) -> Response[bytes]:
    if isinstance(error, Unavailable):
        log.warning("dependency unavailable", dependency=error.dependency, error=error.detail)
        return problem(
            request,
            503,
            "dependency-unavailable",
            f"{error.dependency} is unavailable; retry shortly (with the same Idempotency-Key)",
            headers={"Retry-After": "5"},
        )
    if isinstance(error, TransientConflict):
        return problem(
            request, 409, "concurrent-update", "a concurrent update won; retry", headers={"Retry-After": "1"}
        )
    if isinstance(error, InvalidData):
        return problem(
            request, 422, "invalid-data", "a value in the request cannot be stored (e.g. a NUL character in text)"
        )
    if isinstance(error, ConstraintViolation):
        return problem(
            request, 409, "constraint-violation", f"the write conflicts with existing data ({error.constraint})"
        )
    return internal_error(request, error, "port error", dependency=getattr(error, "dependency", None))


def _http(request: Request[Any, Any, Any], error: HTTPException) -> Response[bytes]:
    status = error.status_code
    headers = dict(error.headers or {})
    if isinstance(error, ProblemException):
        extra = dict(error.extra) if isinstance(error.extra, dict) else {}
        parameter = extra.get("parameter")
        if isinstance(parameter, str):
            # A parameter at fault is named the way every field error is.
            extra["errors"] = [{"pointer": parameter, "code": error.code, "message": error.detail}]
        return problem(request, status, error.code, error.detail, headers=headers, extra=extra or None)
    if isinstance(error, ValidationException) or status == HTTP_400_BAD_REQUEST:
        # ValidationException: a parameter or the body does not fit; any other 400: unreadable body
        errors = [msgspec.structs.asdict(fault) for fault in from_validation(error.extra)]
        if not errors:
            errors = [{"pointer": "", "code": "malformed", "message": error.detail or "the body cannot be read"}]
        return problem(
            request, 400, "invalid-request", error.detail or "the request is invalid", extra={"errors": errors}
        )
    if isinstance(error, NotAuthorizedException):
        headers.setdefault("WWW-Authenticate", 'Bearer realm="craig"')
        return problem(request, 401, "unauthorized", error.detail or "authentication required", headers=headers)
    code = {
        404: "not-found",
        405: "method-not-allowed",
        413: "body-too-large",
        415: "unsupported-media-type",
        429: "rate-limited",
    }.get(status, "http-error")
    if (
        status == HTTP_500_INTERNAL_SERVER_ERROR
        and request.scope.get(CLIENT_GONE_KEY)
        and error.detail == _CLIENT_DISCONNECTED
    ):
        # Litestar's 500 for a body that ended in a disconnect: no defect, and no one to answer.
        # Any other 500 (a defect met after the client left) is still logged as one.
        log.info("client disconnected before the end of its body", path=request.url.path, method=request.method)
        return Response(b"", status_code=CLIENT_CLOSED_REQUEST)
    if status >= HTTP_500_INTERNAL_SERVER_ERROR:
        return internal_error(request, error, "http error", status=status, headers=headers, detail=error.detail)
    detail = error.detail or _title(status, code)
    if status == 413:
        detail = "the request body is larger than this route accepts"
    return problem(request, status, code, detail, headers=headers)


def _unexpected(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    return internal_error(request, error, "unhandled error")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    DomainError: _domain,
    PortError: _port,
    HTTPException: _http,
    Exception: _unexpected,
}
