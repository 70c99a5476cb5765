"""ETags and the ``If-Match`` / ``If-None-Match`` preconditions.

A resource's ETag is a strong validator of its version: ``"v<version>"``. ``If-Match`` is
compared strongly (RFC 9110): a weak tag (``W/"v3"``) or one that is not ours never matches,
so a client holding such a tag gets 412 rather than overwriting a change it has not seen.
"""

from __future__ import annotations

import re

from craig.domain.versions import IfMatch
from craig.entrypoints.http.problems import ProblemException
from craig.entrypoints.http.validators import etag

__all__ = ["etag", "none_match", "parse_if_match", "require_if_match"]

_OURS = re.compile(r'^"v([1-9][0-9]{0,17})"$')
_TAG = re.compile(r'\s*(W/)?"[^"]*"\s*')
#: More tags in one header than any client needs: refused rather than parsed.
_MAX_TAGS = 32


def _tags(header: str, name: str) -> list[str]:
    if len(header) > 4096:
        raise ProblemException(400, "invalid-precondition", f"{name} is too long")
    tags: list[str] = []
    position = 0
    while position < len(header):
        match = _TAG.match(header, position)
        if match is None:
            raise ProblemException(400, "invalid-precondition", f'{name} must be "*" or a list of quoted ETags')
        tags.append(match.group(0).strip())
        position = match.end()
        if position < len(header):
            if header[position] != ",":
                raise ProblemException(400, "invalid-precondition", f"{name} must separate ETags with commas")
            position += 1
        if len(tags) > _MAX_TAGS:
            raise ProblemException(400, "invalid-precondition", f"{name} lists more than {_MAX_TAGS} ETags")
    return tags


def parse_if_match(header: str | None) -> IfMatch | None:
    """None without the header; :class:`IfMatch` of the versions it names otherwise."""
    if header is None:
        return None
    if header.strip() == "*":
        return IfMatch(None)
    versions = set()
    for tag in _tags(header, "If-Match"):
        match = _OURS.match(tag)  # a weak tag has W/ first and never matches
        if match:
            versions.add(int(match.group(1)))
    return IfMatch(frozenset(versions))


def require_if_match(header: str | None) -> IfMatch:
    """:func:`parse_if_match`, with 428 ``precondition-required`` when the header is missing."""
    parsed = parse_if_match(header)
    if parsed is None:
        raise ProblemException(
            428,
            "precondition-required",
            "send If-Match with the ETag you read (GET the resource first), or If-Match: * to change it whatever it is",
        )
    return parsed


def none_match(header: str | None, version: int) -> bool:
    """Whether ``If-None-Match`` names the current version (weakly: ``W/`` is ignored), or is ``*``."""
    if header is None:
        return False
    if header.strip() == "*":
        return True
    current = etag(version)
    return any(tag.removeprefix("W/") == current for tag in _tags(header, "If-None-Match"))
