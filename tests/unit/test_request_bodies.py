"""Every JSON body a route of Craig decodes refuses a field it does not know (400
``invalid-request``): a misspelt optional field must not be dropped in silence, storing
nothing where the client meant a value."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest
from litestar.params import BodyKwarg
from litestar.routes import HTTPRoute

from craig.entrypoints.http.app import create_app
from tests.support.apps import make_container, make_settings

pytestmark = pytest.mark.unit


def _structs(annotation: Any) -> set[type[msgspec.Struct]]:
    """The msgspec structs ``annotation`` names, through ``Annotated``, unions and lists."""
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return {annotation}
    return {struct for arg in get_args(annotation) for struct in _structs(arg)}


def test_every_struct_body_of_craig_forbids_unknown_fields(tmp_path: Path) -> None:
    app = create_app(make_container(make_settings("memory", tmp_path)), manage_runtime=False)
    bodies: dict[str, set[type[msgspec.Struct]]] = {}
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            if not str(getattr(handler.fn, "__module__", "")).startswith("craig."):
                continue
            for name, field in handler.parsed_fn_signature.parameters.items():
                if name == "data" or isinstance(field.kwarg_definition, BodyKwarg):
                    structs = _structs(field.annotation)
                    bodies.setdefault(f"{sorted(handler.http_methods)} {route.path}", set()).update(structs)
    found = {struct for structs in bodies.values() for struct in structs}
    assert {"NewCase", "NewContact", "NewAssignment"} <= {struct.__name__ for struct in found}  # the walk sees them
    lenient = sorted(
        f"{where}: {struct.__name__}"
        for where, structs in bodies.items()
        for struct in structs
        if not struct.__struct_config__.forbid_unknown_fields
    )
    assert lenient == []
