"""The ``Idempotency-Key`` layer for every POST, PATCH and DELETE under ``/v1`` and ``/intake``.

It only translates HTTP to :class:`craig.usecases.idempotency.IdempotentRequests`:
buffer the body, fingerprint it, claim/replay/wait, open the request's transaction and run the
handler in it (its claim kept alive meanwhile), then store the response in that same
transaction and commit it *before* the response leaves, so a client never sees a success whose effects or
stored response could still be lost. A client that disconnects before its body is complete has
sent no request: nothing is claimed, nothing runs, there is no one to answer.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from typing import Any, Protocol
from uuid import UUID

import structlog
from litestar.datastructures import Headers
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, HTTPDisconnectEvent, HTTPRequestEvent, Message, Receive, ReceiveMessage, Scope, Send

from craig.domain.access import Principal
from craig.domain.fingerprint import InvalidIdempotencyKey
from craig.domain.idempotency import ClaimLost, Mismatch, Replay, StoredResponse
from craig.entrypoints import metrics
from craig.entrypoints.http import request_transaction
from craig.entrypoints.http.origin import request_origin
from craig.entrypoints.http.problems import PROBLEM_JSON, problem_bytes
from craig.entrypoints.http.request_transaction import RequestTransaction
from craig.ports.audit import AuditLog
from craig.ports.errors import TransientConflict, Unavailable
from craig.ports.idempotency import Claimed
from craig.usecases.audit.record import AuditWork, replay_entry
from craig.usecases.idempotency import Busy, IdempotentRequests, IdempotentRequestsWork

log = structlog.get_logger(__name__)

HEADER = "idempotency-key"
#: Route ``opt`` key: ``opt={"idempotency": "required"}`` makes the header mandatory.
OPT_KEY = "idempotency"
#: DELETE too: a retried unassignment replays its first answer (204) instead of a 404.
METHODS = frozenset({"POST", "PATCH", "DELETE"})


class RequestWork(IdempotentRequestsWork, AuditWork, Protocol):
    """The request's unit of work: it stores the response."""


class IdempotencyMiddleware(ASGIMiddleware):
    scopes = ("http",)  # type: ignore[assignment]

    def __init__(
        self,
        requests: Callable[[], IdempotentRequests],
        uow_factory: Callable[[], RequestWork],
        audit_log: Callable[[], AuditLog],
        max_body_bytes: int,
    ) -> None:
        self.requests = requests
        self.uow_factory = uow_factory
        self.audit_log = audit_log
        self.max_body_bytes = max_body_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        method = str(scope.get("method", ""))
        if method not in METHODS:
            await next_app(scope, receive, send)
            return
        headers = Headers.from_scope(scope)
        key = headers.get(HEADER)
        handler = scope.get("route_handler")
        required = bool(handler and handler.opt.get(OPT_KEY) == "required")
        if key is None:
            if required:
                await _answer(
                    scope, send, 400, "idempotency-key-required", "this route needs an Idempotency-Key header"
                )
                return
            await next_app(scope, receive, send)
            return

        limit = _body_limit(handler, self.max_body_bytes)
        body = await _read_body(receive, limit)
        if body is _Unread.DISCONNECTED:
            metrics.idempotency_outcomes.labels("disconnected").inc()
            return
        if body is _Unread.TOO_LARGE:
            await _answer(scope, send, 413, "body-too-large", f"the request body is larger than {limit} bytes")
            return
        user = scope.get("user")
        requests = self.requests()
        path = canonical_path(scope)
        try:
            claim_request = await requests.prepare(
                user_sub=user.sub if isinstance(user, Principal) else None,
                method=method,
                path=path,
                key=key,
                content_type=headers.get("content-type"),
                body=body,
                query=scope.get("query_string") or b"",
            )
        except InvalidIdempotencyKey as error:
            await _answer(scope, send, 400, "invalid-idempotency-key", str(error))
            return

        decision = await requests.begin(claim_request)
        if isinstance(decision, Replay):
            metrics.idempotency_outcomes.labels("replayed").inc()
            principal = user if isinstance(user, Principal) else None
            entry = replay_entry(principal, method, path, _case_of(path), decision.response.status_code)
            try:
                await self.audit_log().append([entry])
            except (Unavailable, TransientConflict):
                await _answer(
                    scope,
                    send,
                    503,
                    "dependency-unavailable",
                    "the replay could not be recorded in the audit trail; retry with the same Idempotency-Key",
                    headers=[(b"retry-after", b"1")],
                )
                return
            await _replay(send, decision.response)
            return
        if isinstance(decision, Mismatch):
            metrics.idempotency_outcomes.labels("mismatch").inc()
            await _answer(
                scope,
                send,
                422,
                "idempotency-key-reused",
                "this Idempotency-Key was already used with a different request (body, or query string); use a new key",
            )
            return
        if isinstance(decision, Busy):
            metrics.idempotency_outcomes.labels("busy").inc()
            await _answer(
                scope,
                send,
                409,
                "idempotency-request-in-progress",
                "a request with this Idempotency-Key is still being processed; retry after the delay",
                headers=[(b"retry-after", str(decision.retry_after_seconds).encode())],
            )
            return
        assert isinstance(decision, Claimed)
        await self._run_winner(scope, body, send, next_app, requests, decision)

    async def _run_winner(
        self,
        scope: Scope,
        body: bytes,
        send: Send,
        next_app: ASGIApp,
        requests: IdempotentRequests,
        claim: Claimed,
    ) -> None:
        captured: list[Message] = []

        async def capture(message: Message) -> None:
            captured.append(message)

        uow = self.uow_factory()
        async with requests.keep_claim(claim.slot):
            try:
                # The request's transaction: the handler's use cases nest in it, and the
                # response is stored in it before it commits.
                async with uow:
                    with request_transaction.bound(RequestTransaction(uow, claim.slot.slot_id)):
                        await next_app(scope, _replay_body(body), capture)
                    status, headers, response_body = _collect(captured)
                    stored = await requests.complete(claim.slot, uow, status, headers, response_body)
            except ClaimLost:
                metrics.idempotency_outcomes.labels("claim_lost").inc()
                await _answer(
                    scope,
                    send,
                    409,
                    "idempotency-claim-lost",
                    "this request's claim expired and a retry took it over; this attempt's transaction was "
                    "rolled back (an upload's pending attachment, committed on its own, is completed by the "
                    "retry). Retry to receive the final result",
                    headers=[(b"retry-after", b"1")],
                )
                return
            except (Unavailable, TransientConflict) as error:
                # Only the finalize raises these here: the handler answers its own errors.
                await requests.fail(claim.slot, f"finalize failed: {error}")
                log.warning("idempotent finalize failed", error=str(error))
                await _answer(
                    scope,
                    send,
                    503,
                    "dependency-unavailable",
                    "the result could not be stored, and the request's transaction was rolled back (an "
                    "upload's pending attachment, committed on its own, is completed by the retry). Retry "
                    "with the same Idempotency-Key",
                    headers=[(b"retry-after", b"1")],
                )
                return
            except BaseException as error:
                # The handler raised, or the finalize failed for good: nothing was committed.
                await requests.fail(claim.slot, f"request failed: {type(error).__name__}")
                raise
        if not stored:
            await requests.fail(claim.slot, f"handler answered {status} (not final)")
        metrics.idempotency_outcomes.labels("executed").inc()
        for message in captured:
            await send(message)


_PARAMETER = re.compile(r"\{(\w+)\}")


def canonical_path(scope: Scope) -> str:
    """The request's path with each path parameter as the route parsed it: a UUID in its one
    spelling (Litestar also takes upper case, no dashes, braces and ``urn:uuid:``), so one key
    sent to one resource however its id is spelled is one request, not a new one per spelling."""
    template = scope.get("path_template")
    params = scope.get("path_params") or {}
    names = _PARAMETER.findall(str(template or ""))
    if not template or any(name not in params for name in names):
        return str(scope["path"])  # never a path two resources could share
    return _PARAMETER.sub(lambda found: str(params[found[1]]), str(template))


def _case_of(path: str) -> UUID | None:
    """The case a ``/v1/cases/{id}/...`` path is about, for the audit trail."""
    parts = path.split("/")
    if len(parts) > 3 and parts[1] == "v1" and parts[2] == "cases":
        try:
            return UUID(parts[3])
        except ValueError:
            return None
    return None


def _body_limit(handler: Any, default: int) -> int:
    limit = getattr(handler, "request_max_body_size", None) if handler is not None else None
    return int(limit) if isinstance(limit, int) and limit > 0 else default


class _Unread(enum.Enum):
    TOO_LARGE = "the body exceeds the limit"  # answered 413 without reading the rest
    DISCONNECTED = "the client disconnected before the end of the body"


async def _read_body(receive: Receive, limit: int) -> bytes | _Unread:
    """The whole body, or why not (never buffered beyond ``limit``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return _Unread.DISCONNECTED
        chunk = message.get("body", b"")
        assert isinstance(chunk, bytes)
        size += len(chunk)
        if size > limit:
            return _Unread.TOO_LARGE
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay_body(body: bytes) -> Receive:
    sent = False

    async def receive() -> ReceiveMessage:
        nonlocal sent
        if not sent:
            sent = True
            return HTTPRequestEvent(type="http.request", body=body, more_body=False)
        return HTTPDisconnectEvent(type="http.disconnect")

    return receive


def _collect(messages: list[Message]) -> tuple[int, list[tuple[str, str]], bytes]:
    status = 500
    headers: list[tuple[str, str]] = []
    body = bytearray()
    for message in messages:
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))
    return status, headers, bytes(body)


async def _replay(send: Send, response: StoredResponse) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    headers.append((b"idempotent-replayed", b"true"))
    if response.body_too_large:
        headers.append((b"idempotency-body-omitted", b"true"))
    headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def _answer(
    scope: Scope, send: Send, status: int, code: str, detail: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = problem_bytes(status, code, detail, {"instance": scope["path"]}, origin=request_origin(scope))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
