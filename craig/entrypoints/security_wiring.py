"""Factories the composition root uses for field encryption, captcha and intake ."""

from __future__ import annotations

from craig.adapters.captcha.disabled import DisabledCaptcha
from craig.adapters.captcha.siteverify import SiteverifyCaptcha
from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.adapters.crypto.policy import EncryptionUnavailable, ModeCipher, load_encryptor
from craig.adapters.postgres.encrypted_columns import ENCRYPTED_COLUMNS, plaintext_columns
from craig.domain.constants import CAPTCHA_VERIFY_TIMEOUT, INTAKE_RATE_WINDOW
from craig.entrypoints.settings import Settings, SettingsError
from craig.ports.captcha import CaptchaVerifier
from craig.ports.cipher import FieldCipher
from craig.ports.key_rotation import EncryptedColumn
from craig.usecases.intake import IntakePolicy

CAPTCHA_DISABLED = "disabled"


def field_encryptor_from(settings: Settings) -> FieldEncryptor | None:
    """The key ring, or None (``encryption_mode=optional`` without a key). Raises
    :class:`SettingsError` with the loader's message when the mode is required and no key loads."""
    try:
        return load_encryptor(settings.encryption_mode.value, settings.field_encryption_key)
    except EncryptionUnavailable as error:
        raise SettingsError(str(error)) from None


def field_cipher_from(encryptor: FieldEncryptor | None, settings: Settings) -> FieldCipher:
    return ModeCipher(encryptor, settings.encryption_mode.value, plaintext_columns())


def captcha_from(settings: Settings) -> CaptchaVerifier:
    secret = settings.intake.captcha_secret.strip()
    if not secret or secret == CAPTCHA_DISABLED:
        return DisabledCaptcha()
    return SiteverifyCaptcha(settings.intake.captcha_verify_url, secret, CAPTCHA_VERIFY_TIMEOUT)


def intake_policy_from(settings: Settings) -> IntakePolicy:
    return IntakePolicy(
        require_captcha=settings.intake.require_captcha,
        rate_limit=settings.intake.rate_limit_per_minute,
        rate_window=INTAKE_RATE_WINDOW,
    )


def encrypted_columns() -> list[EncryptedColumn]:
    return list(ENCRYPTED_COLUMNS)
