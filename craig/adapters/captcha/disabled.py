"""The captcha adapter of ``captcha_secret = disabled``: every token passes.

It is only ever asked when ``require_captcha`` is false; startup refuses ``require_captcha=true``
together with the secret ``disabled`` (see ``craig.entrypoints.settings``).
"""

from __future__ import annotations

from craig.ports.captcha import CaptchaVerifier


class DisabledCaptcha(CaptchaVerifier):
    async def verify(self, token: str, remote_ip: str | None) -> bool:
        return True
