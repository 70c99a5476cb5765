"""Production authentication: RS256 / ES256 tokens checked against a JWKS served over HTTP
(on 127.0.0.1), through the real app."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from craig.entrypoints.settings import AuthSettings
from tests.support.apps import serving

pytestmark = pytest.mark.integration

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def _jwk(algorithm: Any, key: Any, kid: str, alg: str) -> dict[str, Any]:
    jwk = json.loads(algorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


@pytest.fixture(scope="module")
def jwks_url() -> Iterator[str]:
    body = json.dumps(
        {"keys": [_jwk(RSAAlgorithm, RSA_KEY, "rsa-1", "RS256"), _jwk(ECAlgorithm, EC_KEY, "ec-1", "ES256")]}
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    finally:
        server.shutdown()


def _token(key: Any, alg: str, kid: str, **overrides: Any) -> str:
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
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


async def test_rs256_and_es256_tokens_from_the_jwks_are_accepted_and_others_refused(
    jwks_url: str, tmp_path: Path
) -> None:
    async with serving("memory", tmp_path, auth=AuthSettings(jwks_url=jwks_url)) as (_container, client):
        for token in (_token(RSA_KEY, "RS256", "rsa-1"), _token(EC_KEY, "ES256", "ec-1")):
            response = await client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200 and response.json()["role"] == "supervisor"

        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        refused = [
            _token(stranger, "RS256", "rsa-1"),  # signed by a key the JWKS does not hold
            _token(RSA_KEY, "RS256", "unknown-kid"),
            _token(RSA_KEY, "RS256", "rsa-1", exp=int(time.time()) - 60),
            _token(RSA_KEY, "RS256", "rsa-1", aud="someone-else"),
            jwt.encode({"sub": str(uuid.uuid4())}, "a-shared-secret-of-at-least-32-bytes!!", algorithm="HS256"),
        ]
        for token in refused:
            response = await client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 401, token
            assert response.headers["content-type"] == "application/problem+json"
            assert response.headers["www-authenticate"].startswith("Bearer")
