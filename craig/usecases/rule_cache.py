"""The per-instance decision cache: compiled rule sets by name (seed: ``engine.insert_decision``).

Each instance keeps the latest version of the rule sets it has used. Creating a version on one
instance inserts it here at once; every other instance evicts the name when the
``rules.cache_invalidated`` event reaches it, and loads the new version on its next evaluation.

A load races an eviction: an instance may read version 1 from the database, receive the event
for version 2 and evict, and only then finish its load. :meth:`RuleSetCache.offer` therefore
refuses a load that began before the latest eviction of its name, so a stale version can never
be cached after the event that retired it.
"""

from __future__ import annotations

from collections import OrderedDict

from craig.domain.constants import RULE_CACHE_MAX_ENTRIES
from craig.domain.rules import RuleSet


class RuleSetCache:
    """Not thread-safe; one per process, used from its event loop (no awaits inside)."""

    def __init__(self, max_entries: int = RULE_CACHE_MAX_ENTRIES) -> None:
        self._entries: OrderedDict[str, RuleSet] = OrderedDict()
        self._max_entries = max_entries
        self._evictions = 0
        self._evicted_at: dict[str, int] = {}
        self._evicted_all_at = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name: str) -> RuleSet | None:
        rule_set = self._entries.get(name)
        if rule_set is not None:
            self._entries.move_to_end(name)
        return rule_set

    def ticket(self) -> int:
        """Take before reading the database; give it back to :meth:`offer`."""
        return self._evictions

    def offer(self, rule_set: RuleSet, ticket: int) -> bool:
        """Cache a version read from the database, unless its name was evicted since ``ticket``
        or a newer version is cached already. True when cached."""
        if max(self._evicted_at.get(rule_set.name, 0), self._evicted_all_at) > ticket:
            return False
        return self.insert(rule_set)

    def insert(self, rule_set: RuleSet) -> bool:
        """Cache ``rule_set`` (this instance just created it) unless a newer version is cached."""
        cached = self._entries.get(rule_set.name)
        if cached is not None and cached.version > rule_set.version:
            return False
        self._entries[rule_set.name] = rule_set
        self._entries.move_to_end(rule_set.name)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
        return True

    def evict(self, name: str | None = None) -> None:
        """Forget ``name`` (every name when None): the next evaluation reads the database."""
        self._evictions += 1
        if name is None:
            self._entries.clear()
            self._evicted_all_at = self._evictions
            return
        self._entries.pop(name, None)
        self._evicted_at[name] = self._evictions
