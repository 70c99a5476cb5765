"""Documentation of a body field for the OpenAPI document, without changing what is accepted.

``Annotated[str, documented(max_length=300, examples=["Doe family"])]`` adds the limits the use
case enforces (a 422 problem naming the field) and examples to the field's schema; msgspec does
not check them itself, so a value beyond a limit still reaches the rule that explains it.
Limits use the names of Litestar's ``Schema``: ``max_length``, ``min_length``, ``minimum``,
``maximum``, ``enum``, ``pattern``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec


def documented(*, description: str | None = None, examples: Sequence[Any] = (), **limits: Any) -> msgspec.Meta:
    schema: dict[str, Any] = {"extra": limits}
    if description is not None:
        schema["description"] = description
    if examples:
        schema["examples"] = list(examples)
    return msgspec.Meta(extra_json_schema=schema)
