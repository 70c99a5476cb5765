"""A JWKS endpoint on 127.0.0.1 whose answers a test controls, and tokens signed for it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def jwk(key: Any, kid: str) -> dict[str, Any]:
    """The public JWK of ``key`` (RSA -> RS256, EC P-256 -> ES256)."""
    rsa_like = isinstance(key, rsa.RSAPrivateKey)
    algorithm: Any = RSAAlgorithm if rsa_like else ECAlgorithm
    data = json.loads(algorithm.to_jwk(key.public_key()))
    return {**data, "kid": kid, "alg": "RS256" if rsa_like else "ES256", "use": "sig"}


def signed(key: Any, kid: str, **overrides: Any) -> str:
    """A valid token for the default issuer and audience, signed by ``key`` under ``kid``."""
    now = int(time.time())
    claims = {
        "sub": str(uuid.uuid4()),
        "name": "Idp User",
        "role": "supervisor",
        "iss": "craig",
        "aud": "craig-api",
        "nbf": now,
        "exp": now + 300,
        **overrides,
    }
    alg = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


def bearer(key: Any, kid: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {signed(key, kid)}"}


class JwksServer:
    """Serves ``{"keys": keys}`` (or ``body``, with ``status``), counting every GET.

    ``hold()`` makes each following GET wait, before answering, until ``release()``; ``held``
    is set once such a GET waits. ``stop()`` closes the port (connections are refused)."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self.keys = list(keys)
        self.body: bytes | None = None
        self.status = 200
        self.fetches = 0
        self.held = threading.Event()
        self._holding = False
        self._released = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with server._lock:
                    server.fetches += 1
                    holding = server._holding
                if holding:
                    server.held.set()
                    server._released.wait(timeout=120)
                body = server.body if server.body is not None else json.dumps({"keys": server.keys}).encode()
                try:
                    self.send_response(server.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/.well-known/jwks.json"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self._stopped = False

    def hold(self) -> None:
        with self._lock:
            self._holding = True
            self.held.clear()
            self._released.clear()

    def release(self) -> None:
        with self._lock:
            self._holding = False
        self._released.set()

    async def wait_held(self) -> None:
        assert await asyncio.to_thread(self.held.wait, 60), "no JWKS fetch arrived"

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self.release()
            self._server.shutdown()
            self._server.server_close()


@contextmanager
def jwks_server(keys: list[dict[str, Any]]) -> Iterator[JwksServer]:
    server = JwksServer(keys)
    try:
        yield server
    finally:
        server.stop()
