"""Use case: public intake, a referral from anyone, without an account.

In order, so the cheap refusals come first and no transaction waits on a third party:

1. :class:`~craig.usecases.intake.admit_intake_client.AdmitIntakeClient`, the per-client rate
   limit, already run by the request pipeline before this use case;
2. validation of the form;
3. the captcha, only when ``require_captcha`` (the provider is called outside any transaction);
4. one transaction: score with the ``intake-triage`` rule set, store the referral with its
   personal details encrypted, stage ``intake.referral_received`` (no personal details in
   the event: it travels through the broker in clear), and record a ``create`` entry of the
   referral by the anonymous caller (its request id and address, nothing it wrote).

A rejected captcha (403) is recorded as a ``denied`` entry, in a transaction of its own.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from craig.domain.audit import AuditAction, AuditOutcome
from craig.domain.constants import INTAKE_TRIAGE_RULE_SET
from craig.domain.errors import Forbidden, InvalidInput
from craig.domain.event_catalogue import REFERRAL_RECEIVED
from craig.domain.events import EventEnvelope
from craig.domain.intake import Referral, new_child, new_referral, new_reporter, triage_facts, triaged
from craig.domain.rules import Evaluation
from craig.ports.captcha import CaptchaVerifier
from craig.ports.clock import Clock
from craig.ports.intake import HasReferrals
from craig.ports.outbox import HasOutbox
from craig.ports.rules import HasRuleSets
from craig.usecases.audit.record import AuditWork, anonymous_entry, record_alone
from craig.usecases.audit.resource_types import REFERRAL
from craig.usecases.events.staging import new_event, stage_event
from craig.usecases.ids import new_id
from craig.usecases.intake.policy import IntakePolicy
from craig.usecases.rules.current_rule_set import current_rule_set
from craig.usecases.rules.rule_cache import RuleSetCache


class SubmitReferralWork(AuditWork, HasOutbox, HasReferrals, HasRuleSets, Protocol):
    """The unit of work :class:`SubmitReferral` uses."""


class CaptchaRequired(InvalidInput):
    code = "captcha-required"


class CaptchaRejected(Forbidden):
    code = "captcha-rejected"


@attrs.frozen(kw_only=True)
class ReferralForm:
    """What ``POST /intake/referrals`` carries, not yet validated."""

    reporter_name: str
    reporter_phone: str | None = None
    reporter_email: str | None = None
    child_first_name: str
    child_age: int | None = None
    concern: str
    location: str | None = None
    captcha_token: str | None = None


class SubmitReferral:
    """Validate, verify the captcha, triage and store a referral (its client already admitted
    by :class:`AdmitIntakeClient`)."""

    def __init__(
        self, uow: SubmitReferralWork, captcha: CaptchaVerifier, cache: RuleSetCache, clock: Clock, policy: IntakePolicy
    ) -> None:
        self.uow = uow
        self.captcha = captcha
        self.cache = cache
        self.clock = clock
        self.policy = policy

    async def __call__(self, form: ReferralForm, client_ip: str | None, request_id: str | None = None) -> Referral:
        """The stored referral. Raises ``InvalidInput`` (422), ``CaptchaRequired`` (422),
        ``CaptchaRejected`` (403), or ``Unavailable`` (503). ``client_ip`` goes to the captcha
        provider; it and ``request_id`` go to the audit entry."""
        reporter = new_reporter(form.reporter_name, form.reporter_phone, form.reporter_email)
        child = new_child(form.child_first_name, form.child_age)
        referral = new_referral(
            id=new_id(),
            reporter=reporter,
            child=child,
            concern=form.concern,
            location=form.location,
            now=self.clock.now(),
        )
        if self.policy.require_captcha:
            token = (form.captcha_token or "").strip()
            if not token:
                raise CaptchaRequired("captcha_token is required")
            if not await self.captcha.verify(token, client_ip):
                refused = anonymous_entry(
                    AuditAction.CREATE,
                    REFERRAL,
                    request_id=request_id,
                    client_ip=client_ip,
                    outcome=AuditOutcome.DENIED,
                )
                await record_alone(self.uow, refused)
                raise CaptchaRejected("the captcha was not accepted; solve it again")
        async with self.uow:
            rule_set = await current_rule_set(self.uow, self.cache, INTAKE_TRIAGE_RULE_SET)
            if rule_set is None:
                referral = triaged(referral, Evaluation(None, None), None)
            else:
                referral = triaged(referral, rule_set.evaluate(triage_facts(referral)), rule_set.version)
            await self.uow.referrals.add(referral)
            await stage_event(self.uow, received_event(referral))
            entry = anonymous_entry(
                AuditAction.CREATE, REFERRAL, referral.id, request_id=request_id, client_ip=client_ip
            )
            await self.uow.audit.append([entry])
            await self.uow.commit()
        return referral


def received_event(referral: Referral) -> EventEnvelope:
    return new_event(
        REFERRAL_RECEIVED,
        aggregate_id=referral.id,
        payload={
            "referral_id": str(referral.id),
            "reference": referral.reference,
            "priority": referral.priority,
            "triage_version": referral.triage_version,
            "received_at": referral.received_at.isoformat(),
        },
        now=referral.received_at,
    )
