"""Port: captcha verification for the public intake form."""

from __future__ import annotations

from typing import Protocol


class CaptchaVerifier(Protocol):
    """Checks a captcha response token with the provider (hCaptcha, Turnstile, ...)."""

    async def verify(self, token: str, remote_ip: str | None) -> bool:
        """True when the provider accepts ``token`` (for this client IP when given), False when it
        rejects it. Raises :class:`craig.ports.errors.Unavailable` when the provider cannot answer
        (network error, timeout, 5xx, unparseable reply): that is not the caller's fault.
        """
        ...
