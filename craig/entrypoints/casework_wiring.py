"""Factories the composition root uses for casework: the intake queue's response times."""

from __future__ import annotations

from datetime import timedelta

from craig.domain.screening import ResponseTimes
from craig.entrypoints.settings import Settings


def response_times_from(settings: Settings) -> ResponseTimes:
    screening = settings.screening
    return ResponseTimes(
        urgent=timedelta(hours=screening.urgent_response_hours),
        high=timedelta(hours=screening.high_response_hours),
        medium=timedelta(hours=screening.medium_response_hours),
        low=timedelta(hours=screening.low_response_hours),
    )
