"""Every problem type Craig answers: the one registry.

Each entry is a stable ``code`` (the last segment of the problem's ``type`` URI,
``<origin>/problems/<code>``), the HTTP status it is answered with, its ``title`` (the same for
every occurrence, as RFC 9457 asks), what it means and what the client should do. The problem
bodies (:mod:`craig.entrypoints.http.problems`), the OpenAPI document and the pages at
``GET /problems/{code}`` are all made from it; README's list is checked against it by a test.
A new error code belongs here, or a test fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import attrs


@attrs.frozen
class ProblemType:
    code: str
    status: int
    title: str
    meaning: str
    action: str


def _p(code: str, status: int, title: str, meaning: str, action: str) -> ProblemType:
    return ProblemType(code, status, title, meaning, action)


RETRY_SAME_KEY = "Retry after the `Retry-After` delay, with the same `Idempotency-Key` if you sent one."

# fmt: off
PROBLEM_TYPES: Final[tuple[ProblemType, ...]] = (
    # --- the request itself ----------------------------------------------------------------------
    _p("invalid-request", 400, "The request is malformed",
       "The body or a parameter could not be read: malformed JSON or multipart, a missing field, a value "
       "of the wrong type or format, or an unknown field. `errors` lists each field at fault.",
       "Correct each field named in `errors` (`pointer` is a JSON Pointer into the body, or the "
       "parameter's name) and send the request again."),
    _p("invalid-cursor", 400, "The cursor is not one this API handed out",
       "A `cursor` parameter was changed, cut, or made for another list or other filters.",
       "Start again from the first page (without `cursor`) and follow each page's `next_cursor` or `Link`."),
    _p("invalid-parameter", 400, "A query parameter has a value this route cannot use",
       "A query parameter is out of its range or not of its form (e.g. `limit` outside 1-200, "
       "`assigned_to` neither `me` nor a UUID, `page` mixed with `cursor`). `errors` names it.",
       "Correct the parameter named in `errors`."),
    _p("unknown-parameter", 400, "The route has no such query parameter",
       "A query parameter the route does not take was sent (a typo would otherwise be ignored and answer "
       "an unfiltered list). `detail` lists the parameters it takes.",
       "Remove the parameter, or correct its name."),
    _p("invalid-precondition", 400, "The If-Match or If-None-Match header cannot be read",
       "The header must be `*` or a comma-separated list of quoted ETags, at most 32 of them.",
       "Send the `ETag` exactly as you received it, quotes included."),
    _p("invalid-idempotency-key", 400, "The Idempotency-Key header is invalid",
       "The `Idempotency-Key` header must be 1-255 printable ASCII characters.",
       "Send a key such as a random UUID."),
    _p("idempotency-key-required", 400, "This route needs an Idempotency-Key",
       "The route refuses to run without an `Idempotency-Key` header, so that a retry cannot apply it twice.",
       "Send a fresh `Idempotency-Key` (e.g. a random UUID) and reuse it only to retry this request."),
    _p("unauthorized", 401, "Authentication required",
       "The request carries no `Authorization: Bearer <JWT>` header, or the token is invalid or expired.",
       "Obtain a valid token and send it as `Authorization: Bearer <JWT>`."),
    _p("forbidden", 403, "Not allowed for your role",
       "Your role may not do this (e.g. only supervisors and admins assign case workers).",
       "Ask someone with the role named in `detail`."),
    _p("not-found", 404, "Not found",
       "Nothing exists at this path, or what it names does not exist or is not visible to you "
       "(a case worker sees only the cases they opened or are assigned to).",
       "Check the ids in the path."),
    _p("method-not-allowed", 405, "Method not allowed",
       "The path exists but does not accept this HTTP method.",
       "Use one of the methods the OpenAPI document lists for the path."),
    _p("body-too-large", 413, "Request body too large",
       "The request body is larger than this route accepts.",
       "Send a smaller body; the limits are in the OpenAPI document's descriptions."),
    _p("unsupported-media-type", 415, "Unsupported media type",
       "The request's `Content-Type` is not one this route reads.",
       "Send the media type the OpenAPI document lists for the route."),
    _p("invalid-input", 422, "A business rule refused the input",
       "The request was well-formed but a value breaks a rule (e.g. an empty title, a time in the future, "
       "a page size out of range). `errors` names the field when there is one.",
       "Correct the value as `detail` says."),
    _p("invalid-data", 422, "A value cannot be stored",
       "A value in the request cannot be stored, e.g. text containing a NUL character.",
       "Remove the offending characters and retry."),
    _p("rate-limited", 429, "Too many requests",
       "This client sent more requests than the limit allows (public intake counts per IPv4 address or "
       "IPv6 /64).",
       "Wait for the number of seconds in `Retry-After`, then retry."),
    # --- idempotency ----------------------------------------------------------------------------
    _p("idempotency-key-reused", 422, "Idempotency-Key reused with another body",
       "This `Idempotency-Key` was already used with a different request (method, path or body).",
       "Use a new key for a new request; reuse a key only to retry the very same request."),
    _p("idempotency-request-in-progress", 409, "A request with this key is still running",
       "A request with the same `Idempotency-Key` is still being processed.",
       RETRY_SAME_KEY),
    _p("idempotency-claim-lost", 409, "The request was taken over by its retry",
       "This request took too long; a retry with the same key took it over and its effects were discarded.",
       "Retry with the same `Idempotency-Key` to receive the final result."),
    # --- state ---------------------------------------------------------------------------------
    _p("conflict", 409, "Conflict with the current state",
       "The request conflicts with the resource's current state.", "Read the resource again and decide."),
    _p("concurrent-update", 409, "A concurrent update won",
       "Another request changed the same data at the same moment.", RETRY_SAME_KEY),
    _p("constraint-violation", 409, "Conflicts with existing data",
       "The write conflicts with data that already exists (a uniqueness or reference rule).",
       "Read the current state, then decide whether to retry."),
    _p("precondition-failed", 412, "The resource changed since you read it",
       "The `If-Match` header names a version (ETag) that is no longer the resource's current one.",
       "Read the resource again (its current `ETag` comes with it), reapply your change and retry."),
    _p("precondition-required", 428, "This change needs If-Match",
       "The route changes a resource only when the request says which version it read.",
       "Send `If-Match` with the `ETag` of the version you read."),
    # --- dependencies ------------------------------------------------------------------------------
    _p("dependency-unavailable", 503, "A dependency is unavailable",
       "A service Craig depends on (database, object store, broker, captcha provider, a partner) did not "
       "answer. Nothing was committed.",
       RETRY_SAME_KEY),
    _p("upstream", 502, "A partner's API failed",
       "Reading from a partner agency failed; `upstream_path` names the partner path that failed.",
       "Retry later; tell the partner if it persists."),
    _p("upstream_deserialize", 502, "A partner answered in the wrong shape",
       "A partner agency answered with a body Craig cannot read; `upstream_path` names the path.",
       "Tell the partner; retrying will not help until they fix it."),
    _p("internal-error", 500, "Internal error",
       "Something unexpected failed on Craig's side. `incident` identifies the log line with the details.",
       "Quote the `incident` id when you report it; retrying with the same `Idempotency-Key` is safe."),
    _p("http-error", 500, "HTTP error",
       "An HTTP error without a more specific type; `status` holds its status code.",
       "Read `detail`."),
    # --- intake ---------------------------------------------------------------------------------
    _p("invalid-referral", 422, "The referral form is invalid",
       "A field of the referral form breaks a rule; `errors` names it.", "Correct the field and resubmit."),
    _p("captcha-required", 422, "A captcha token is required",
       "This deployment requires a `captcha_token` with every referral.",
       "Solve the captcha and send its token as `captcha_token`."),
    _p("captcha-rejected", 403, "The captcha was rejected",
       "The captcha provider did not accept the `captcha_token`.", "Solve a new captcha and resubmit."),
    # --- cases, contacts, attachments -------------------------------------------------------------
    _p("attachment-file-missing", 422, "No file in the upload",
       "The multipart body has no single part named `file` with a file name.",
       "Send the file as multipart/form-data in one part named `file`."),
    _p("attachment-too-large", 413, "The file is too large",
       "The file is larger than attachments may be; `max_bytes` is the limit.", "Send a smaller file."),
    _p("unsupported-attachment-type", 415, "This file type is not accepted",
       "The file's declared type is not on the allowed list; `allowed_types` lists them.",
       "Convert the file to one of `allowed_types`."),
    _p("attachment-content-mismatch", 415, "The file is not what its type says",
       "The file's content does not match its declared media type.",
       "Send the file with its true media type (and a matching extension)."),
    _p("empty-attachment", 422, "The file is empty", "The uploaded file has no content.", "Send a non-empty file."),
    # --- the case lifecycle and the intake queue ----------------------------------------------------
    _p("case-closed", 409, "The case is closed",
       "A closed case takes no new contact, attachment, placement or assignment.",
       "Reopen the case first (supervisors and admins), or work on an open case."),
    _p("case-has-active-placement", 409, "The case has an active placement",
       "A case cannot be closed while a child is placed.", "End or cancel the placement first."),
    _p("invalid-case-transition", 409, "The case cannot change this way",
       "Only an open case can be closed and only a closed case reopened; `from` and `to` say which.",
       "Read the case again: someone may have closed or reopened it meanwhile."),
    _p("referral-already-screened", 409, "The referral was screened already",
       "A referral is screened once; `screened_by` and `screened_at` say who did it and when.",
       "Read the referral again to see the decision (and `case_id` when it was screened in)."),
    _p("foster-home-closed", 409, "The foster home is closed",
       "A closed foster home takes no new or moved placement.", "Choose an open foster home, or reopen it."),
    _p("foster-home-has-active-placements", 409, "The foster home has active placements",
       "A foster home cannot be closed while children are placed in it.", "End or move its placements first."),
    _p("capacity-below-occupancy", 409, "The capacity is below the occupancy",
       "A foster home's capacity cannot go below the number of children placed in it now.",
       "Choose a capacity at least the current occupancy, or move placements first."),
    # --- placements ----------------------------------------------------------------------------------
    _p("case-already-placed", 409, "The case already has an active placement",
       "A case has at most one active placement; `case_id` names the case.", "End the active placement first."),
    _p("placement-closed", 409, "The placement is closed",
       "An ended or cancelled placement cannot change; `status` is its status.",
       "Create a new placement instead."),
    _p("placement-needs-foster-home", 409, "The placement has no foster home",
       "A placement without a foster home cannot be activated.", "Activate it with `foster_home_id`."),
    _p("invalid-placement-transition", 409, "The placement cannot change this way",
       "The placement's status cannot go from `from` to `to`.",
       "Planned goes to active or cancelled; active goes to ended."),
    _p("foster-home-at-capacity", 409, "The foster home is full",
       "The foster home has no free place (`capacity`, `occupancy`).", "Choose another foster home."),
    _p("occupancy-underflow", 409, "The foster home's occupancy disagrees with its placements",
       "Freeing a place in a home that has none occupied: the stored occupancy is inconsistent.",
       "Report it to an operator."),
    # --- exchange and rules ------------------------------------------------------------------------
    _p("invalid-partner", 422, "The partner registration is invalid",
       "A field of the partner registration breaks a rule (URLs, lengths, rate limit).",
       "Correct the field named in `detail`."),
    _p("partner-name-taken", 409, "A partner has this name", "Partner names are unique.", "Choose another name."),
    _p("invalid-exchange-transaction", 422, "The transaction is invalid",
       "The transaction's partner list or payload breaks a rule.", "Correct it as `detail` says."),
    _p("unknown-partners", 422, "Unknown partners",
       "Some partner ids name no partner; `unknown_partner_ids` lists them.", "Send only registered partner ids."),
    _p("invalid-job-transition", 409, "The send job cannot change this way",
       "Only a failed send job can be retried; `status` is its status.", "Nothing to do, or wait for it to fail."),
    _p("invalid-rule-set", 422, "The rule set is invalid",
       "The rule document does not follow the rule language; `errors` points at the fault.",
       "Correct the rule at `pointer`."),
)
# fmt: on

BY_CODE: Final[Mapping[str, ProblemType]] = MappingProxyType({p.code: p for p in PROBLEM_TYPES})


def problem_type(code: str) -> ProblemType | None:
    return BY_CODE.get(code)
