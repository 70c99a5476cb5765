"""Problem types resolve to pages; Swagger UI gets its own files and nothing else of the package."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from litestar.testing import TestClient

from craig.entrypoints.http.app import create_app
from craig.entrypoints.http.problem_types import PROBLEM_TYPES
from tests.support.apps import auth, make_container, make_settings
from tests.support.problems import problem_code


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    container = make_container(make_settings("memory", tmp_path_factory.mktemp("data")))
    with TestClient(create_app(container, manage_runtime=False), base_url="http://craig.test:8080") as client:
        client.headers.update(auth(container))
        yield client


def test_every_problem_type_has_a_page(client: TestClient) -> None:
    for problem in PROBLEM_TYPES:
        page = client.get(f"/problems/{problem.code}", headers={"Authorization": ""})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert problem.code in page.text and str(problem.status) in page.text
        assert "<script" not in page.text


def test_an_unknown_code_is_a_404_problem(client: TestClient) -> None:
    for code in ("no-such-problem", "<script>alert(1)</script>", "x" * 5000):
        response = client.get(f"/problems/{code}")
        assert response.status_code == 404 and response.headers["content-type"] == "application/problem+json"
        assert problem_code(response.json()) == "not-found"


def test_a_problem_type_is_absolute_under_the_request_origin_and_resolves(client: TestClient) -> None:
    missing = client.get("/v1/cases/00000000-0000-0000-0000-000000000000")
    type_uri = urlsplit(missing.json()["type"])
    assert (type_uri.scheme, type_uri.netloc) == ("http", "craig.test:8080")
    assert client.get(type_uri.path).status_code == 200
    invalid = client.get("/v1/cases?page=abc")
    assert invalid.status_code == 400 and invalid.json()["errors"] == [
        {"pointer": "page", "code": "wrong-type", "message": "Expected `int | null`, got `str`"}
    ]


def test_a_forged_host_or_untrusted_forwarded_header_is_not_echoed(client: TestClient) -> None:
    forged = client.get("/v1/nothing", headers={"Host": "evil.example/<x>"}).json()["type"]
    assert "evil" not in forged and "<x>" not in forged
    forwarded = client.get("/v1/nothing", headers={"X-Forwarded-Host": "evil.example"}).json()["type"]
    assert urlsplit(forwarded).netloc == "craig.test:8080"


def test_field_errors_have_one_shape_for_400_and_422(client: TestClient) -> None:
    bad_type = client.post(
        "/intake/referrals", json={"reporter": {"name": 1}, "child": {"first_name": "A"}, "concern": "c"}
    )
    assert bad_type.status_code == 400
    assert bad_type.json()["errors"][0] | {"message": ""} == {
        "pointer": "/reporter/name",
        "code": "wrong-type",
        "message": "",
    }
    missing = client.post("/intake/referrals", json={"reporter": {"name": "R"}, "child": {}, "concern": "c"})
    assert missing.status_code == 400 and missing.json()["errors"][0]["pointer"] == "/child/first_name"
    rule = client.post(
        "/intake/referrals", json={"reporter": {"name": "R"}, "child": {"first_name": "A", "age": 99}, "concern": "c"}
    )
    assert rule.status_code == 422 and rule.json()["errors"][0]["pointer"] == "/child/age"
    per_page = client.get("/v1/cases?per_page=100000")
    assert per_page.status_code == 422 and per_page.json()["errors"][0]["pointer"] == "per_page"
    no_body = client.post("/v1/cases", content=b"{bad", headers={"Content-Type": "application/json"})
    assert no_body.status_code == 400 and no_body.json()["errors"][0]["pointer"] == ""


def test_swagger_ui_gets_every_asset_it_references(client: TestClient) -> None:
    page = client.get("/swagger-ui")
    assert page.status_code == 200
    assets = re.findall(r'(?:href|src)="(/swagger-ui/static/[^"]+)"', page.text)
    assert len(assets) == 4
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200 and len(response.content) > 0, asset
    assert re.search(r'url: "/api-doc/openapi.json"', page.text)


@pytest.mark.parametrize(
    "name",
    [
        "swagger-editor-bundle.js",
        "swagger-ui-bundle.js.map",
        "swagger-editor.js.map",
        "index.css",
        "oauth2-redirect.html",
        "../__init__.py",
        "%2e%2e%2f__init__.py",
    ],
)
def test_swagger_ui_serves_nothing_else(client: TestClient, name: str) -> None:
    assert client.get(f"/swagger-ui/static/{name}").status_code == 404
