"""Intake's deployment policy, shared by :class:`AdmitIntakeClient` (the per-client rate limit)
and :class:`SubmitReferral` (whether a captcha is required).

Built from ``CRAIG_INTAKE__*`` settings by the composition root.
"""

from __future__ import annotations

from datetime import timedelta

import attrs


@attrs.frozen
class IntakePolicy:
    require_captcha: bool
    rate_limit: int
    rate_window: timedelta
