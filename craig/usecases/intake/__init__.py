"""Public intake: admit a client against its rate limit, then take its referral."""

from craig.usecases.intake.admit_intake_client import AdmitIntakeClient, RateLimited
from craig.usecases.intake.policy import IntakePolicy
from craig.usecases.intake.submit_referral import (
    CaptchaRejected,
    CaptchaRequired,
    ReferralForm,
    SubmitReferral,
    SubmitReferralWork,
)

__all__ = [
    "AdmitIntakeClient",
    "CaptchaRejected",
    "CaptchaRequired",
    "IntakePolicy",
    "RateLimited",
    "ReferralForm",
    "SubmitReferral",
    "SubmitReferralWork",
]
