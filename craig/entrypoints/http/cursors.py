"""Opaque, tamper-evident cursors for keyset pagination.

A cursor carries the sort key of the last item of a page and the list it belongs to (the route
and its filters), MAC'd with the field cipher's blind index (a key derived from the field key
ring, so every instance accepts every other's cursors, and a rotation keeps old cursors valid
while the old key is in the ring). A cursor that was changed, cut, made for another list or for
other filters is a 400 problem, never a 500 and never a silently different page.

Form: ``<base64url(JSON)>.<MAC>`` — URL-safe, no padding.

Timestamps carry their zone. One read back without a zone (PostgreSQL's ``infinity`` and
``-infinity`` come back from asyncpg as a naive ``datetime.max`` and ``datetime.min``; rows
written before dates were bounded may hold them) is put in a cursor as UTC, and a cursor made
before that, holding it without a zone, is read as UTC too: both after the MAC is checked, so
only a value this API wrote is ever read that way.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from craig.domain.constants import CURSOR_MAX_LENGTH
from craig.domain.keyset import SortKey
from craig.entrypoints.http.problems import ProblemException
from craig.ports.cipher import FieldCipher

_PURPOSE = "http.cursor"


def _bad(detail: str) -> ProblemException:
    return ProblemException(400, "invalid-cursor", detail, extra={"parameter": "cursor"})


def _zoned(value: datetime) -> datetime:
    """``value``, read as UTC when it has no zone (the database's timestamps are all UTC)."""
    return value if value.utcoffset() is not None else value.replace(tzinfo=UTC)


def _encode_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"t": _zoned(value).isoformat()}
    if isinstance(value, UUID):
        return {"u": str(value)}
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"a sort key holds datetimes, UUIDs, ints and strings, not {type(value).__name__}")
    return value


def _decode_value(value: Any, kind: type) -> Any:
    if kind is datetime and isinstance(value, dict) and isinstance(value.get("t"), str):
        return _zoned(datetime.fromisoformat(value["t"]))
    if kind is UUID and isinstance(value, dict) and isinstance(value.get("u"), str):
        return UUID(value["u"])
    if kind in (int, str) and type(value) is kind:
        return value
    raise ValueError(f"expected {kind.__name__}")


class Cursors:
    """Makes and reads cursors; ``scope`` names the list and its filters."""

    def __init__(self, cipher: FieldCipher) -> None:
        self.cipher = cipher

    def _mac(self, payload: str) -> list[str]:
        return [mac.replace(":", ".") for mac in self.cipher.blind_index_candidates(_PURPOSE, payload)]

    def encode(self, scope: str, key: SortKey) -> str:
        document = json.dumps([scope, [_encode_value(value) for value in key]], separators=(",", ":"))
        payload = base64.urlsafe_b64encode(document.encode()).decode("ascii").rstrip("=")
        mac = self.cipher.blind_index(_PURPOSE, payload).replace(":", ".")
        return f"{payload}.{mac}"

    def decode(self, scope: str, cursor: str, kinds: Sequence[type]) -> SortKey:
        """The sort key, or a 400 ``invalid-cursor`` problem."""
        if not cursor or len(cursor) > CURSOR_MAX_LENGTH or not cursor.isascii():
            raise _bad("the cursor is malformed; start again without one")
        payload, _, mac = cursor.partition(".")
        if not mac or mac not in self._mac(payload):
            raise _bad("the cursor was altered or is not one this API made; start again without one")
        try:
            document = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            made_for, values = document
            if made_for != scope:
                raise _bad("the cursor belongs to another list or to other filters; keep the filters of its first page")
            if not isinstance(values, list) or len(values) != len(kinds):
                raise ValueError("wrong arity")
            return tuple(_decode_value(value, kind) for value, kind in zip(values, kinds, strict=True))
        except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as error:
            raise _bad("the cursor is malformed; start again without one") from error
