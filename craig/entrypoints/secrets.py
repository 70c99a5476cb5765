"""Development secrets, the settings step of the embedded and memory profiles.

On first run they are generated into ``$CRAIG_DATA_DIR/secrets`` (mode 0600) with a warning, so
one command gives a working system; production must supply its own (startup refuses otherwise).
Which profile completes its settings with them is decided with its adapter set, in ``PROFILES``
(craig/entrypoints/container.py).
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import attrs
import structlog

from craig.domain.constants import GENERATED_JWT_SECRET_BYTES
from craig.entrypoints.settings import Settings, SettingsError

log = structlog.get_logger(__name__)

#: The file under ``$CRAIG_DATA_DIR/secrets`` each generated secret is kept in, by its setting.
DEV_SECRET_FILES = {"CRAIG_AUTH__JWT_SECRET": "jwt_secret", "CRAIG_FIELD_ENCRYPTION_KEY": "field_encryption_key"}


def dev_secret_path(settings: Settings, variable: str) -> Path:
    return settings.data_dir / "secrets" / DEV_SECRET_FILES[variable]


def _read_or_create(path: Path, make: str) -> str:
    try:
        if path.exists():
            return path.read_text().strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(make + "\n")
    except OSError as error:
        raise SettingsError(
            f"the development secret {path} cannot be read or created ({error.strerror or error}); "
            "set CRAIG_DATA_DIR to a folder Craig may write"
        ) from None
    log.warning("generated a development secret; do not use it in production", path=str(path))
    return make


def with_dev_secrets(settings: Settings) -> Settings:
    """Fill the JWT secret and field-encryption key, when not set, from the data dir."""
    auth = settings.auth
    if not auth.jwt_secret and not auth.jwks_url:
        path = dev_secret_path(settings, "CRAIG_AUTH__JWT_SECRET")
        auth = attrs.evolve(auth, jwt_secret=_read_or_create(path, secrets.token_urlsafe(GENERATED_JWT_SECRET_BYTES)))
    key = settings.field_encryption_key
    if not key:
        path = dev_secret_path(settings, "CRAIG_FIELD_ENCRYPTION_KEY")
        key = _read_or_create(path, base64.b64encode(secrets.token_bytes(32)).decode())
    return attrs.evolve(settings, auth=auth, field_encryption_key=key)
