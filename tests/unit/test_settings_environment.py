"""Reading settings from the environment: the variables Kubernetes injects are ignored, every
secret can come from a ``_FILE``, and each value remembers where it came from."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.entrypoints.settings import (
    HttpSettings,
    ObjectStoreSettings,
    Settings,
    SettingsError,
    Source,
    effective,
    load_settings,
    read_environment,
    settable,
)
from craig.entrypoints.settings.environment import is_kubernetes_service_variable

pytestmark = pytest.mark.unit

BASE = {"CRAIG_PROFILE": "memory"}

# What the kubelet writes for a Service `craig` with the ports http (8000/TCP) and metrics
# (9100/TCP), and for a Service `craig-api` in the same namespace.
KUBERNETES = {
    "CRAIG_SERVICE_HOST": "10.96.12.7",
    "CRAIG_SERVICE_PORT": "8000",
    "CRAIG_SERVICE_PORT_HTTP": "8000",
    "CRAIG_SERVICE_PORT_METRICS": "9100",
    "CRAIG_PORT": "tcp://10.96.12.7:8000",
    "CRAIG_PORT_8000_TCP": "tcp://10.96.12.7:8000",
    "CRAIG_PORT_8000_TCP_PROTO": "tcp",
    "CRAIG_PORT_8000_TCP_PORT": "8000",
    "CRAIG_PORT_8000_TCP_ADDR": "10.96.12.7",
    "CRAIG_PORT_9100_TCP": "tcp://10.96.12.7:9100",
    "CRAIG_PORT_9100_TCP_PROTO": "tcp",
    "CRAIG_PORT_9100_TCP_PORT": "9100",
    "CRAIG_PORT_9100_TCP_ADDR": "10.96.12.7",
    "CRAIG_API_SERVICE_HOST": "fd00::2a",
    "CRAIG_API_SERVICE_PORT": "80",
    "CRAIG_API_SERVICE_PORT_HTTP_ALT": "80",
    "CRAIG_API_PORT": "tcp://[fd00::2a]:80",
    "CRAIG_API_PORT_80_TCP": "tcp://[fd00::2a]:80",
    "CRAIG_API_PORT_53_UDP_PROTO": "udp",
    "CRAIG_API_PORT_3868_SCTP_ADDR": "fd00::2a",
}

SECRETS = {
    "CRAIG_AUTH__JWT_SECRET",
    "CRAIG_FIELD_ENCRYPTION_KEY",
    "CRAIG_DATABASE__URL",
    "CRAIG_BROKER__URL",
    "CRAIG_OBJECT_STORE__ACCESS_KEY",
    "CRAIG_OBJECT_STORE__SECRET_KEY",
    "CRAIG_INTAKE__CAPTCHA_SECRET",
}


def refusal(environ: dict[str, str]) -> str:
    with pytest.raises(SettingsError) as raised:
        load_settings({**BASE, **environ})
    return str(raised.value)


def test_the_variables_kubernetes_injects_for_a_craig_service_are_ignored() -> None:
    assert load_settings({**BASE, **KUBERNETES}) == load_settings(BASE)


@pytest.mark.parametrize(
    ("name", "value", "suggestion"),
    [
        ("CRAIG_DATABSE__URL", "postgresql://db/craig", "CRAIG_DATABASE__URL"),
        ("CRAIG_HTTP__PROT", "8000", "CRAIG_HTTP__PORT"),
        ("CRAIG_HTTP_PORT", "8000", "CRAIG_HTTP__PORT"),  # the bare Kubernetes form, but not its value
        ("CRAIG_SERVICE_HOSTS", "10.96.12.7", None),
        ("CRAIG_PORT_HTTP", "8000", None),
        ("CRAIG_PORT_8000", "tcp://10.96.12.7:8000", None),
        ("CRAIG_PORT_8000_TCP_HOST", "10.96.12.7", None),
        ("CRAIG_PORT_8000_HTTP", "tcp://10.96.12.7:8000", None),
        ("CRAIG_PORTAL", "x", None),
        ("CRAIG_PORT", "8000", None),
        ("CRAIG_HTTP__SERVICE_HOST", "10.96.12.7", None),
    ],
)
def test_anything_else_is_still_refused_with_its_suggestion(name: str, value: str, suggestion: str | None) -> None:
    assert not is_kubernetes_service_variable(name, value)
    message = refusal({**KUBERNETES, name: value})
    assert message.startswith(f"{name} is not a Craig setting; ")
    if suggestion:
        assert message == f"{name} is not a Craig setting; did you mean {suggestion}?"


def test_no_setting_has_the_shape_of_a_kubernetes_variable() -> None:
    for name in settable():
        assert not is_kubernetes_service_variable(name, "tcp://10.96.12.7:8000"), name
        assert not is_kubernetes_service_variable(f"{name}_FILE", "tcp://10.96.12.7:8000"), name


def test_the_secret_settings_are_those_the_schema_marks() -> None:
    assert {name for name, leaf in settable().items() if leaf.secret} == SECRETS
    assert all(not leaf.field.repr for leaf in settable().values() if leaf.secret)


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_every_secret_can_be_read_from_a_file(name: str, tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("s3cr3t-from-a-file\n")
    loaded = read_environment({**BASE, f"{name}_FILE": str(path)})
    leaf = settable()[name]
    assert leaf.value(loaded.settings) == "s3cr3t-from-a-file"
    assert loaded.sources[name] == Source("file", str(path))
    assert all(source == Source("default") for other, source in loaded.sources.items() if other not in (name, *BASE))


def _one_line_ending_stripped(content: str) -> str:
    """The documented rule: one trailing ``\r\n`` or ``\n``, nothing else."""
    for ending in ("\r\n", "\n"):
        if content.endswith(ending):
            return content[: -len(ending)]
    return content


@given(st.text(st.characters(blacklist_categories=["Cs"]), max_size=40))
def test_exactly_one_trailing_newline_is_stripped(secret: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "secret"
        path.write_bytes((secret + "\n").encode())
        settings = read_environment({"CRAIG_AUTH__JWT_SECRET_FILE": str(path)}).settings
        assert settings.auth.jwt_secret == _one_line_ending_stripped(secret + "\n")
        path.write_bytes(secret.encode())
        assert read_environment({"CRAIG_AUTH__JWT_SECRET_FILE": str(path)}).settings.auth.jwt_secret == (
            _one_line_ending_stripped(secret)
        )


def test_a_file_secret_passes_the_same_startup_rules(tmp_path: Path) -> None:
    path = tmp_path / "captcha"
    path.write_text("disabled\n")
    message = refusal({"CRAIG_INTAKE__REQUIRE_CAPTCHA": "true", "CRAIG_INTAKE__CAPTCHA_SECRET_FILE": str(path)})
    assert "set CRAIG_INTAKE__CAPTCHA_SECRET to a real secret" in message


def test_a_setting_and_its_file_together_are_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "url"
    path.write_text("postgresql://db/craig\n")
    message = refusal({"CRAIG_DATABASE__URL": "postgresql://x/y", "CRAIG_DATABASE__URL_FILE": str(path)})
    assert message == "CRAIG_DATABASE__URL and CRAIG_DATABASE__URL_FILE are both set; keep one of them"


def test_a_missing_or_unreadable_file_is_refused_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "not-mounted" / "jwt"
    message = refusal({"CRAIG_AUTH__JWT_SECRET_FILE": str(missing)})
    assert message.startswith(f"CRAIG_AUTH__JWT_SECRET_FILE={missing} cannot be read (No such file or directory)")
    assert "\n" not in message
    message = refusal({"CRAIG_AUTH__JWT_SECRET_FILE": str(tmp_path)})  # a folder
    assert message.startswith(f"CRAIG_AUTH__JWT_SECRET_FILE={tmp_path} cannot be read (Is a directory)")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00")
    assert refusal({"CRAIG_AUTH__JWT_SECRET_FILE": str(binary)}).startswith(
        f"CRAIG_AUTH__JWT_SECRET_FILE={binary} is not UTF-8 text"
    )
    assert refusal({"CRAIG_AUTH__JWT_SECRET_FILE": ""}).startswith("CRAIG_AUTH__JWT_SECRET_FILE is empty")


def test_a_file_for_a_setting_that_is_no_secret_is_unknown(tmp_path: Path) -> None:
    path = tmp_path / "port"
    path.write_text("9000\n")
    message = refusal({"CRAIG_HTTP__PORT_FILE": str(path)})
    assert message == (
        "CRAIG_HTTP__PORT_FILE is not a Craig setting; did you mean CRAIG_HTTP__PORT? "
        "(only secret settings are read from a file)"
    )
    assert refusal({"CRAIG_AUTH__JWT_SECRT_FILE": str(path)}) == (
        "CRAIG_AUTH__JWT_SECRT_FILE is not a Craig setting; did you mean CRAIG_AUTH__JWT_SECRET_FILE?"
    )


def test_each_value_remembers_its_source_and_secrets_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("s3-secret\n")
    loaded = read_environment(
        {
            **BASE,
            "CRAIG_HTTP__PORT": "9000",
            "CRAIG_OBJECT_STORE__ACCESS_KEY": "AKIA-test",
            "CRAIG_OBJECT_STORE__SECRET_KEY_FILE": str(path),
        }
    )
    rows = {name: (value, source) for name, value, source in effective(loaded)}
    assert set(rows) == set(settable())
    assert rows["CRAIG_HTTP__PORT"] == ("9000", Source("environment"))
    assert rows["CRAIG_PROFILE"] == ("memory", Source("environment"))
    assert rows["CRAIG_HTTP__HOST"] == ("127.0.0.1", Source("default"))
    assert rows["CRAIG_OBJECT_STORE__ACCESS_KEY"] == ("****", Source("environment"))
    assert rows["CRAIG_OBJECT_STORE__SECRET_KEY"] == ("****", Source("file", str(path)))
    assert str(rows["CRAIG_OBJECT_STORE__SECRET_KEY"][1]) == f"file {path}"
    assert rows["CRAIG_INTAKE__CAPTCHA_SECRET"] == ("disabled", Source("default"))  # a default is no secret
    assert rows["CRAIG_DATABASE__URL"] == ("", Source("default"))
    assert not any("s3-secret" in value or value == "AKIA-test" for value, _ in rows.values())
    assert loaded.settings == Settings(
        profile="memory",  # type: ignore[arg-type]
        http=HttpSettings(port=9000),
        object_store=ObjectStoreSettings(access_key="AKIA-test", secret_key="s3-secret"),
    )
