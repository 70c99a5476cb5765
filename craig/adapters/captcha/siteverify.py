"""hCaptcha / Cloudflare Turnstile compatible verification (``POST {verify_url}``).

Both providers take a form with ``secret``, ``response`` and optionally ``remoteip``, and answer
JSON whose ``success`` is true or false. A provider that cannot answer is ``Unavailable`` (the
client may retry), never a rejection of the person filling in the form.
"""

from __future__ import annotations

from datetime import timedelta

import httpx

from craig.ports.captcha import CaptchaVerifier
from craig.ports.errors import Unavailable

#: Error codes that mean Craig's captcha configuration is wrong, not the visitor's token.
_OUR_FAULT = frozenset({"missing-input-secret", "invalid-input-secret", "sitekey-secret-mismatch"})


class CaptchaUnavailable(Unavailable):
    def __init__(self, detail: str) -> None:
        super().__init__("captcha provider", detail)


class SiteverifyCaptcha(CaptchaVerifier):
    def __init__(self, verify_url: str, secret: str, timeout: timedelta) -> None:
        self.verify_url = verify_url
        self._secret = secret
        self._timeout = timeout.total_seconds()

    async def verify(self, token: str, remote_ip: str | None) -> bool:
        form = {"secret": self._secret, "response": token}
        if remote_ip:
            form["remoteip"] = remote_ip
        try:
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
                response = await client.post(self.verify_url, data=form)
        except httpx.HTTPError as error:
            raise CaptchaUnavailable(f"{type(error).__name__}: {error}") from error
        if response.status_code != 200:
            raise CaptchaUnavailable(f"siteverify answered HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise CaptchaUnavailable("siteverify answered something that is not JSON") from None
        if not isinstance(body, dict) or not isinstance(body.get("success"), bool):
            raise CaptchaUnavailable("siteverify's answer has no boolean `success`")
        codes = body.get("error-codes") or []
        if not body["success"] and isinstance(codes, list) and _OUR_FAULT.intersection(map(str, codes)):
            raise CaptchaUnavailable(f"the provider refused our configuration: {', '.join(map(str, codes))}")
        return bool(body["success"])
