"""The served OpenAPI document holds every operation, present and future, to the API's contract."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from craig.entrypoints.http.app import create_app
from craig.entrypoints.http.problem_types import BY_CODE
from tests.support.apps import make_container, make_settings

LOWER_CAMEL = re.compile(r"[a-z]+(?:[A-Z][a-z0-9]*)+")
VERBS = frozenset(
    "get list open create record upload download assign register show start retry evaluate submit update "
    "screen close reopen search unassign delete replace cancel end verify read".split()
)
METHODS = frozenset({"get", "post", "put", "patch", "delete"})
LINKED_CODE = re.compile(r"\[`([^`]+)`\]\(/problems/\1\)")


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    app = create_app(make_container(make_settings("memory", tmp_path_factory.mktemp("data"))), manage_runtime=False)
    with TestClient(app) as client:
        response = client.get("/api-doc/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_operation_ids_are_unique_lower_camel_verb_noun(document: dict[str, Any]) -> None:
    ids = [operation.get("operationId", "") for _, _, operation in operations(document)]
    assert len(ids) == len(set(ids)) and len(ids) >= 34
    for operation_id in ids:
        assert LOWER_CAMEL.fullmatch(operation_id), operation_id
        verb = re.match(r"[a-z]+", operation_id)
        assert verb and verb.group(0) in VERBS, f"{operation_id} does not start with a verb"


def test_every_operation_has_a_summary_and_a_description_with_its_rules(document: dict[str, Any]) -> None:
    for path, method, operation in operations(document):
        assert operation.get("summary"), (method, path)
        description = operation.get("description", "")
        assert ("**Roles:**" in description) == path.startswith("/v1/"), (method, path)
        assert ("**Public:**" in description) != path.startswith("/v1/"), (method, path)
        if method in ("post", "patch") and path.startswith(("/v1/", "/intake/")):
            assert "**Idempotency:**" in description, (method, path)


def test_every_success_response_has_a_concrete_schema(document: dict[str, Any]) -> None:
    for path, method, operation in operations(document):
        successes = {status: r for status, r in operation["responses"].items() if status.startswith("2")}
        assert successes, (method, path)
        for status, response in successes.items():
            if status == "204":  # No Content: a body would be a lie
                assert not response.get("content"), (method, path, status)
                continue
            assert response.get("content"), (method, path, status)
            for media_type, content in response["content"].items():
                schema = resolve(document, content["schema"])
                # A union (a keyset page or the legacy offset page) is concrete when each branch is.
                branches = [resolve(document, one) for one in schema.get("oneOf", [schema])]
                for branch in branches:
                    if media_type == "application/json":
                        assert branch.get("properties"), (method, path, status, "bare object")
                    else:
                        assert branch.get("type") == "string", (method, path, status, media_type)


def test_every_component_object_has_properties(document: dict[str, Any]) -> None:
    for name, schema in document["components"]["schemas"].items():
        if schema.get("type") == "object":
            assert schema.get("properties"), name
        else:
            assert "enum" in schema, name


def test_every_error_is_a_documented_problem(document: dict[str, Any]) -> None:
    for path, method, operation in operations(document):
        for status, response in operation["responses"].items():
            if not status.startswith(("4", "5")) or operation["operationId"] == "getReadiness":
                continue
            assert set(response["content"]) == {"application/problem+json"}, (method, path, status)
            assert response["content"]["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
            codes = LINKED_CODE.findall(response["description"])
            assert codes and all(BY_CODE[code].status == int(status) for code in codes), (method, path, status)
        if path.startswith("/v1/"):
            assert "401" in operation["responses"], (method, path)
        if "{" in path:
            assert "404" in operation["responses"], (method, path)
    assert "status_code" not in str(document), "Litestar's default 400 body is documented"


def test_header_parameters_and_response_headers(document: dict[str, Any]) -> None:
    for path, method, operation in operations(document):
        headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        idempotent = method in ("post", "patch") and path.startswith(("/v1/", "/intake/"))
        assert ("Idempotency-Key" in headers) == idempotent, (method, path)
        for status in ("429", "503"):
            if status in operation["responses"] and operation["operationId"] != "getReadiness":
                assert operation["responses"][status]["headers"]["Retry-After"]["required"] is True
    cases = document["paths"]["/v1/cases"]["post"]["responses"]["201"]
    assert cases["headers"]["Location"]["required"] is True
    assert "Idempotent-Replayed" in cases["headers"]


def test_upload_is_multipart_with_a_binary_file_and_download_is_binary(document: dict[str, Any]) -> None:
    attachments = "/v1/cases/{case_id}/contacts/{contact_id}/attachments"
    upload = document["paths"][attachments]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert upload["properties"]["file"] == upload["properties"]["file"] | {"type": "string", "format": "binary"}
    assert "attachment_type" in upload["properties"] and upload["required"] == ["file"]
    download = document["paths"][f"{attachments}/{{attachment_id}}/content"]["get"]["responses"]["200"]
    assert download["content"]["application/octet-stream"]["schema"] == {"type": "string", "format": "binary"}
    assert download["headers"]["Content-Disposition"]["required"] is True


def test_readme_lists_every_problem_type() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    missing = [code for code in BY_CODE if f"| `{code}` |" not in readme]
    assert not missing, f"README's problem type table lacks {missing}"
