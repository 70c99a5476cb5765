"""``craig token``: a development JWT."""

from __future__ import annotations

import uuid

import click

from craig.domain.access import Role
from craig.domain.constants import DEV_TOKEN_LIFETIME
from craig.entrypoints.bootstrap import bootstrap
from craig.entrypoints.cli.common import ExitCode, Refused, echo, exit_codes


@click.command(epilog=exit_codes())
@click.option("--sub", required=True, type=click.UUID, help="The user's id (a UUID).")
@click.option("--role", required=True, type=click.Choice([r.value for r in Role]), help="The user's role.")
@click.option("--name", required=True, help="The user's display name.")
@click.option(
    "--ttl",
    type=click.IntRange(min=1),
    default=int(DEV_TOKEN_LIFETIME.total_seconds()),
    show_default=True,
    metavar="SECONDS",
    help="Lifetime of the token.",
)
def token(sub: uuid.UUID, role: str, name: str, ttl: int) -> int:
    """Print a development JWT signed with the HS256 secret.

    It reads the same settings and data dir as `craig serve` (embedded: the secret generated in
    $CRAIG_DATA_DIR/secrets/jwt_secret), and refuses when a JWKS is configured: tokens then come
    from your identity provider.
    """
    from craig.entrypoints.tokens import mint

    container = bootstrap()
    try:
        minted = mint(container.settings().auth, sub=sub, role=Role(role), name=name, ttl_seconds=ttl)
    except ValueError as error:
        raise Refused(str(error)) from None
    echo(minted)
    return ExitCode.OK
