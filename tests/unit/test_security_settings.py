"""Startup refusals of unsafe security settings (captcha, field key, JWT secret, CORS, proxies)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import attrs
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from craig.entrypoints.settings import (
    AuthSettings,
    BrokerSettings,
    DatabaseSettings,
    EncryptionMode,
    HttpSettings,
    IntakeSettings,
    ObjectStoreSettings,
    Profile,
    Settings,
    SettingsError,
    load_settings,
    validate,
)

pytestmark = pytest.mark.unit

KEY = base64.b64encode(os.urandom(32)).decode()
CAPTCHA_MESSAGE = (
    "require_captcha=true but captcha_secret is 'disabled' — set CRAIG_INTAKE__CAPTCHA_SECRET to a real secret"
)
PRODUCTION_DEPENDENCIES = {
    "database": DatabaseSettings(url="postgresql://db/craig"),
    "broker": BrokerSettings(url="amqp://rabbit/"),
    "object_store": ObjectStoreSettings(endpoint="s3:9000", access_key="a", secret_key="b"),
}


def problem(settings: Settings) -> str | None:
    try:
        validate(settings)
    except SettingsError as error:
        return str(error)
    return None


def test_the_seed_captcha_message_from_the_environment() -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_INTAKE__REQUIRE_CAPTCHA": "true"})
    assert str(raised.value) == CAPTCHA_MESSAGE
    settings = load_settings(
        {
            "CRAIG_PROFILE": "memory",
            "CRAIG_INTAKE__REQUIRE_CAPTCHA": "true",
            "CRAIG_INTAKE__CAPTCHA_SECRET": "0x-real-secret",
        }
    )
    assert settings.intake.require_captcha


def test_production_without_a_field_key_refuses_with_the_seed_message() -> None:
    base = Settings(profile=Profile.PRODUCTION, auth=AuthSettings(jwt_secret="x" * 32), **PRODUCTION_DEPENDENCIES)
    message = problem(base)
    assert message is not None
    assert message.startswith("encryption_mode=required but CRAIG_FIELD_ENCRYPTION_KEY load failed: ")
    assert problem(attrs.evolve(base, encryption_mode=EncryptionMode.OPTIONAL)) is None
    assert problem(attrs.evolve(base, field_encryption_key=KEY)) is None
    # memory and embedded generate a key at bootstrap, so an empty one is fine there
    assert problem(attrs.evolve(base, profile=Profile.EMBEDDED)) is None


def test_untrusted_proxy_entries_are_refused() -> None:
    assert problem(Settings(http=HttpSettings(trusted_proxies="10.0.0.0/8, 127.0.0.1, ::1"))) is None
    message = problem(Settings(http=HttpSettings(trusted_proxies="10.0.0.1,proxy.local")))
    assert message is not None and "proxy.local" in message


@given(
    profile=st.sampled_from(list(Profile)),
    require_captcha=st.booleans(),
    captcha_secret=st.sampled_from(["disabled", "", "0x4AAA-secret"]),
    jwt_secret=st.sampled_from(["", "short", "x" * 31, "y" * 32, "z" * 64]),
    jwks_url=st.sampled_from(["", "https://idp.example/jwks"]),
    cors=st.sampled_from(["", "*", "https://partner.example", "https://a.example, *"]),
    credentials=st.booleans(),
    mode=st.sampled_from(list(EncryptionMode)),
    key=st.sampled_from(["", KEY, f"new:{KEY}", "not-a-key", base64.b64encode(b"16 bytes only!!!").decode()]),
    rate=st.sampled_from([-1, 0, 1, 10]),
)
def test_validation_refuses_exactly_the_unsafe_combinations(
    profile: Profile,
    require_captcha: bool,
    captcha_secret: str,
    jwt_secret: str,
    jwks_url: str,
    cors: str,
    credentials: bool,
    mode: EncryptionMode,
    key: str,
    rate: int,
) -> None:
    settings = Settings(
        profile=profile,
        encryption_mode=mode,
        field_encryption_key=key,
        auth=AuthSettings(jwt_secret=jwt_secret, jwks_url=jwks_url),
        http=HttpSettings(cors_origins=cors, cors_allow_credentials=credentials),
        intake=IntakeSettings(
            require_captcha=require_captcha, captcha_secret=captcha_secret, rate_limit_per_minute=rate
        ),
        **(PRODUCTION_DEPENDENCIES if profile is Profile.PRODUCTION else {}),
    )
    production = profile is Profile.PRODUCTION
    key_usable = key in (KEY, f"new:{KEY}")
    reasons = {
        "jwt": production and not jwks_url and len(jwt_secret) < 32,
        "cors": credentials and "*" in [o.strip() for o in cors.split(",")],
        "captcha": require_captcha and captcha_secret in ("disabled", ""),
        "rate": rate < 1,
        "key": (key != "" and not key_usable) or (key == "" and production and mode is EncryptionMode.REQUIRED),
    }
    message = problem(settings)
    assert (message is not None) == any(reasons.values()), (reasons, message)
    if message is not None and message.startswith("require_captcha"):
        assert reasons["captcha"]
        if captcha_secret == "disabled":
            assert message == CAPTCHA_MESSAGE
    if message is not None and message.startswith("encryption_mode="):
        assert reasons["key"]
        assert message.startswith(f"encryption_mode={mode.value} but CRAIG_FIELD_ENCRYPTION_KEY load failed: ")
    if message is not None and "JWT_SECRET" in message:
        assert reasons["jwt"]
    if message is not None and "CORS" in message:
        assert reasons["cors"]


def test_a_wildcard_cors_origin_logs_the_seed_warning(tmp_path: Path) -> None:
    from craig.entrypoints.http.app import CORS_WILDCARD_WARNING, create_app
    from tests.support import apps

    assert CORS_WILDCARD_WARNING.startswith("CORS origins set to wildcard '*' — acceptable for public intake")
    for origins, warned in (("*", True), ("https://partner.example", False)):
        settings = apps.make_settings("memory", tmp_path, http=HttpSettings(cors_origins=origins))
        with structlog.testing.capture_logs() as logs:
            create_app(apps.make_container(settings), manage_runtime=False)
        assert (
            any(entry["event"] == CORS_WILDCARD_WARNING and entry["log_level"] == "warning" for entry in logs) is warned
        )


def test_send_worker_settings_come_from_the_environment_and_bad_ones_are_refused() -> None:
    settings = load_settings(
        {"CRAIG_PROFILE": "memory", "CRAIG_EXCHANGE__MAX_CONCURRENCY": "4", "CRAIG_EXCHANGE__PREFETCH": "0"}
    )
    assert (settings.exchange.max_concurrency, settings.exchange.prefetch) == (4, 0)
    with pytest.raises(SettingsError) as raised:
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_EXCHANGE__PREFETCH": "-1"})
    assert str(raised.value).startswith("CRAIG_EXCHANGE__PREFETCH must be 0 or more (got -1)")
    with pytest.raises(SettingsError) as raised:
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_EXCHANGE__MAX_CONCURRENCY": "0"})
    assert str(raised.value).startswith("CRAIG_EXCHANGE__MAX_CONCURRENCY must be positive (got 0)")


def test_the_exchange_retention_comes_from_the_environment_and_must_be_positive() -> None:
    assert load_settings({"CRAIG_PROFILE": "memory"}).exchange.retention_days == 30
    assert (
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_EXCHANGE__RETENTION_DAYS": "90"}).exchange.retention_days == 90
    )
    with pytest.raises(SettingsError) as raised:
        load_settings({"CRAIG_PROFILE": "memory", "CRAIG_EXCHANGE__RETENTION_DAYS": "0"})
    assert str(raised.value).startswith("CRAIG_EXCHANGE__RETENTION_DAYS must be positive (got 0")
