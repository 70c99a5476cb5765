"""AMQP topic matching (``*`` is one word, ``#`` is zero or more), for the in-process bus."""

from __future__ import annotations

from functools import cache


@cache
def topic_matches(pattern: str, routing_key: str) -> bool:
    return _match(tuple(pattern.split(".")), tuple(routing_key.split(".")))


def _match(pattern: tuple[str, ...], words: tuple[str, ...]) -> bool:
    if not pattern:
        return not words
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return any(_match(rest, words[i:]) for i in range(len(words) + 1))
    if not words:
        return False
    return (head == "*" or head == words[0]) and _match(rest, words[1:])
