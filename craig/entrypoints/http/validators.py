"""The one spelling of an ETag: a strong validator of a resource's version."""

from __future__ import annotations


def etag(version: int) -> str:
    return f'"v{version}"'
