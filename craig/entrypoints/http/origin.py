"""The origin (``scheme://host[:port]``) a client reached Craig at, for absolute problem ``type`` URIs.

The scheme and host are the request's own (``Host`` header); behind a reverse proxy that is a
trusted proxy (``CRAIG_HTTP__TRUSTED_PROXIES``, the same setting the per-client limits honour),
``X-Forwarded-Proto`` and ``X-Forwarded-Host`` as the nearest proxy set them win. A ``Host`` that
is not a plain host name or address (with an optional port) is never echoed: the server's own
address is used instead.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from litestar.datastructures import Headers
from litestar.types import Scope

from craig.entrypoints.http.client_ip import trusted_networks

#: App state key holding ``CRAIG_HTTP__TRUSTED_PROXIES`` (set by ``create_app``).
TRUSTED_PROXIES_STATE = "trusted_proxies"
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")
_SCHEMES = frozenset({"http", "https"})


def _last(headers: Headers, name: str) -> str | None:
    values = [part.strip() for value in headers.getall(name, []) for part in value.split(",") if part.strip()]
    return values[-1] if values else None


def _trusted_peer(scope: Scope) -> bool:
    app: Any = scope.get("litestar_app")
    setting = str(getattr(getattr(app, "state", None), TRUSTED_PROXIES_STATE, "") or "")
    peer = scope.get("client")
    if not setting or not peer:
        return False
    try:
        address = ipaddress.ip_address(str(peer[0]))
    except ValueError:
        return False
    return any(address in network for network in trusted_networks(setting))


def _server_host(scope: Scope) -> str:
    server = scope.get("server")
    if not server:
        return "localhost"
    host, port = server[0], server[1]
    host = f"[{host}]" if ":" in str(host) else str(host)
    return host if port is None else f"{host}:{port}"


def request_origin(scope: Scope) -> str:
    headers = Headers.from_scope(scope)
    scheme = str(scope.get("scheme", "http"))
    host = headers.get("host")
    if _trusted_peer(scope):
        scheme = _last(headers, "x-forwarded-proto") or scheme
        host = _last(headers, "x-forwarded-host") or host
    if scheme not in _SCHEMES:
        scheme = "http"
    if host is None or not _HOST.fullmatch(host):
        host = _server_host(scope)
    return f"{scheme}://{host}"
