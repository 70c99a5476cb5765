"""``POST /intake/referrals``: the public referral form (no account, no JWT)."""

from __future__ import annotations

from uuid import UUID

import msgspec
from litestar import Response, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from craig.domain.constants import INTAKE_MAX_BODY_BYTES
from craig.entrypoints.http import request_context
from craig.entrypoints.http.api_contract import answers
from craig.entrypoints.http.client_limits import OPT_KEY as CLIENT_RATE_LIMIT
from craig.entrypoints.http.dependencies import ClientAddress
from craig.usecases.intake import ReferralForm, SubmitReferral

TAGS = ["intake"]


class ReporterBody(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    phone: str | None = None
    email: str | None = None


class ChildBody(msgspec.Struct, forbid_unknown_fields=True):
    first_name: str
    age: int | None = None


class ReferralBody(msgspec.Struct, forbid_unknown_fields=True):
    """``captcha_token`` is required only when the deployment sets ``require_captcha``."""

    reporter: ReporterBody
    child: ChildBody
    concern: str
    location: str | None = None
    captcha_token: str | None = None


class ReceiptView(msgspec.Struct):
    id: UUID
    priority: str | None
    reference: str


@post(
    "/referrals",
    status_code=202,
    tags=TAGS,
    summary="Report a concern about a child (public)",
    description=(
        "Public: no token. Answers 202 with the referral's id, its triage priority (null when no "
        "rule matched) and a reference to quote when calling. 422 for an invalid form or a missing "
        "captcha token, 403 when the captcha is rejected, 429 with Retry-After past the limit per "
        "client (IPv4 address or IPv6 /64), 503 when the captcha provider cannot be reached."
    ),
    request_max_body_size=INTAKE_MAX_BODY_BYTES,
    security=[],
    # counted before anything else, idempotency included
    opt={CLIENT_RATE_LIMIT: "intake", **answers("invalid-referral", "captcha-required", "captcha-rejected")},
)
async def submit_referral(
    data: JSONBody[ReferralBody], client_address: ClientAddress, submit_referral: NamedDependency[SubmitReferral]
) -> Response[ReceiptView]:
    form = ReferralForm(
        reporter_name=data.reporter.name,
        reporter_phone=data.reporter.phone,
        reporter_email=data.reporter.email,
        child_first_name=data.child.first_name,
        child_age=data.child.age,
        concern=data.concern,
        location=data.location,
        captcha_token=data.captcha_token,
    )
    info = request_context.current()
    # no token: the audit entry names the request and the client's address, never the reporter
    referral = await submit_referral(form, client_address, None if info is None else info.request_id)
    receipt = ReceiptView(id=referral.id, priority=referral.priority, reference=referral.reference)
    return Response(receipt, status_code=202)


ROUTES = [submit_referral]
