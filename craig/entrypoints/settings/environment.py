"""Settings from environment variables: prefix ``CRAIG_``, ``__`` for nesting.

``CRAIG_DATABASE__URL`` sets ``Settings.database.url``; ``CRAIG_PROFILE`` sets ``Settings.profile``.
A secret setting can instead be read from a file: ``CRAIG_DATABASE__URL_FILE=/run/secrets/db``
(the file's content, one trailing newline stripped). Every other ``CRAIG_`` variable is refused
with the closest setting as a suggestion, except the service variables Kubernetes injects for a
Service named ``craig`` or ``craig-<name>`` (``CRAIG_SERVICE_HOST``, ``CRAIG_PORT_8000_TCP`` ...)
and the test suite's own ``CRAIG_TEST_*``.
"""

from __future__ import annotations

import difflib
import enum
import math
import os
import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from craig.entrypoints.settings.rules import validate
from craig.entrypoints.settings.schema import Leaf, Settings, SettingsError, leaves, resolved_fields, section_of

PREFIX = "CRAIG_"
FILE_SUFFIX = "_FILE"
_IGNORED_PREFIXES = ("CRAIG_TEST_",)  # the test suite's own knobs
MASK = "****"

# What the kubelet injects for a Service (name upper-cased, `-` as `_`), docker-link style:
#   <SVC>_SERVICE_HOST, <SVC>_SERVICE_PORT, <SVC>_SERVICE_PORT_<PORT NAME>,
#   <SVC>_PORT, <SVC>_PORT_<PORT>_<PROTOCOL>, and that one with _PROTO, _PORT or _ADDR.
# A Craig setting always has `__` or none of these endings, so none of them is a misspelt one,
# except that `CRAIG_<SECTION>_PORT` could be: the bare form counts only with Kubernetes' value.
_SERVICE = r"CRAIG(?:_[A-Z0-9]+)*?"
_KUBERNETES_NAME = re.compile(
    rf"{_SERVICE}_(?:SERVICE_HOST|SERVICE_PORT(?:_[A-Z0-9]+)*|PORT_[0-9]{{1,5}}_(?:TCP|UDP|SCTP)(?:_PROTO|_PORT|_ADDR)?)"
)
_KUBERNETES_BARE_PORT = re.compile(rf"{_SERVICE}_PORT")
_KUBERNETES_PORT_URL = re.compile(r"(?:tcp|udp|sctp)://(?:[0-9.]+|\[[0-9a-fA-F:.]+\]):[0-9]{1,5}")


def is_kubernetes_service_variable(name: str, value: str) -> bool:
    """True for a variable the kubelet injects for a Service whose name is or starts with ``craig``."""
    if _KUBERNETES_NAME.fullmatch(name):
        return True
    return bool(_KUBERNETES_BARE_PORT.fullmatch(name) and _KUBERNETES_PORT_URL.fullmatch(value))


SourceKind = Literal["default", "environment", "file"]


@attrs.frozen
class Source:
    """Where a setting's value came from; ``detail`` is the file's path."""

    kind: SourceKind
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}" if self.detail else self.kind


DEFAULT = Source("default")
ENVIRONMENT = Source("environment")


@attrs.frozen
class Loaded:
    """Settings, and for each variable where its value came from."""

    settings: Settings
    sources: Mapping[str, Source]


def variable(path: tuple[str, ...]) -> str:
    """``("auth", "jwt_secret")`` -> ``CRAIG_AUTH__JWT_SECRET``."""
    return PREFIX + "__".join(part.upper() for part in path)


def settable() -> dict[str, Leaf]:
    """Every setting by its variable."""
    return {variable(leaf.path): leaf for leaf in leaves()}


def read_environment(environ: Mapping[str, str] | None = None) -> Loaded:
    """:class:`Settings` from the environment (``os.environ`` by default), not yet validated."""
    env = os.environ if environ is None else environ
    known = settable()
    from_files = {f"{name}{FILE_SUFFIX}": name for name, leaf in known.items() if leaf.secret}
    raw: dict[str, str] = {}
    sources: dict[str, Source] = dict.fromkeys(known, DEFAULT)
    for name in sorted(env):
        value = env[name]
        if not name.startswith(PREFIX) or name.startswith(_IGNORED_PREFIXES):
            continue
        if name in known:
            raw[name], sources[name] = value, ENVIRONMENT
        elif name in from_files:
            setting = from_files[name]
            if setting in env:
                raise SettingsError(f"{setting} and {name} are both set; keep one of them")
            raw[setting] = _read_secret_file(name, value)
            sources[setting] = Source("file", value)
        elif not is_kubernetes_service_variable(name, value):
            raise SettingsError(_unknown(name, [*known, *from_files]))
    return Loaded(_build(Settings, (), raw), sources)


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from the environment (``os.environ`` by default), then validate."""
    settings = read_environment(environ).settings
    validate(settings)
    return settings


def _unknown(name: str, known: list[str]) -> str:
    hint = difflib.get_close_matches(name, known, n=1)
    fix = f"did you mean {hint[0]}?" if hint else "see `craig config` for the settings"
    problem = f"{name} is not a Craig setting; {fix}"
    if name.endswith(FILE_SUFFIX) and name.removesuffix(FILE_SUFFIX) in known:
        problem += " (only secret settings are read from a file)"
    return problem


def _read_secret_file(name: str, path: str) -> str:
    if not path:
        raise SettingsError(f"{name} is empty; set it to the path of the file that holds the secret")
    try:
        content = Path(path).read_bytes().decode("utf-8")
    except OSError as error:
        raise SettingsError(
            f"{name}={path} cannot be read ({error.strerror or error}); mount the file there or fix the path"
        ) from None
    except UnicodeDecodeError:
        raise SettingsError(f"{name}={path} is not UTF-8 text; write the secret as text") from None
    for newline in ("\r\n", "\n"):
        if content.endswith(newline):
            return content.removesuffix(newline)
    return content


def _convert(raw: str, annotation: Any, name: str) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if raw.strip() == "":
            return None
        return _convert(raw, args[0], name)
    if annotation is bool:
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise SettingsError(f"{name}={raw!r} is not a boolean; use true or false")
    if annotation in (int, float):
        try:
            number = annotation(raw.strip())
        except ValueError:
            raise SettingsError(f"{name}={raw!r} is not a number; set it to a {annotation.__name__}") from None
        if not math.isfinite(number):  # nan slips past every comparison, inf past every maximum
            raise SettingsError(f"{name}={raw!r} is not a finite number; set it to a {annotation.__name__}")
        return number
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        allowed = ", ".join(str(m.value) for m in annotation)
        try:
            return annotation(raw.strip().lower())
        except ValueError:
            raise SettingsError(f"{name}={raw!r} is not valid; use one of: {allowed}") from None
    if annotation is Path:
        return Path(raw)
    return raw


def _build(cls: type, path: tuple[str, ...], values: Mapping[str, str]) -> Any:
    kwargs: dict[str, Any] = {}
    for field in resolved_fields(cls):
        here = (*path, field.name)
        if (section := section_of(field)) is not None:
            kwargs[field.name] = _build(section, here, values)
        elif (name := variable(here)) in values:
            kwargs[field.name] = _convert(values[name], field.type, name)
    return cls(**kwargs)


def _shown(value: Any) -> str:
    return "" if value is None else str(value.value if isinstance(value, enum.Enum) else value)


def reference() -> Iterator[tuple[str, str, str]]:
    """(variable, default, help) for every setting: the configuration reference."""
    defaults = Settings()
    for leaf in leaves():
        yield variable(leaf.path), _shown(leaf.value(defaults)), leaf.help


def effective(loaded: Loaded) -> Iterator[tuple[str, str, Source]]:
    """(variable, value in force, source) for every setting. A secret that was set (from the
    environment or a file) shows as ``****``; its default is no secret, and shows."""
    for leaf in leaves():
        name = variable(leaf.path)
        source = loaded.sources.get(name, DEFAULT)
        shown = _shown(leaf.value(loaded.settings))
        yield name, MASK if leaf.secret and shown and source != DEFAULT else shown, source
