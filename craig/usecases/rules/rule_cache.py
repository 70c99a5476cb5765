"""The per-instance decision cache: compiled rule sets by name.

Each instance keeps the latest version of the rule sets it has used, and remembers the names it
found no rule set for. Creating a version on one instance inserts it here at once; every other
instance evicts the name when the ``rules.cache_invalidated`` event reaches it, and loads the new
version on its next evaluation.

Two things bound how stale an entry can be when an event does not arrive (an instance's
broadcast queue does not outlive its broker connection, so events published while it was
disconnected are lost to it):

* the whole cache is dropped whenever the instance's subscription (re)connects
  (:meth:`RuleSetCache.evict` with no name, wired by the composition root); and
* no entry is served older than ``max_age`` (``CRAIG_RULES__CACHE_MAX_AGE_SECONDS``, 60 s):
  past it the next evaluation reads the database again. Age is measured on a monotonic clock
  (``time.monotonic`` unless one is injected), never on the wall clock, so a clock stepped back
  (NTP, a VM restored from a snapshot) cannot keep a stale decision for longer.

A load races an eviction: an instance may read version 1 from the database, receive the event
for version 2 and evict, and only then finish its load. :meth:`RuleSetCache.offer` therefore
refuses a load that began before the latest eviction of its name, so a stale version can never
be cached after the event that retired it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta

import attrs

from craig.domain.constants import RULE_CACHE_MAX_AGE, RULE_CACHE_MAX_ENTRIES
from craig.domain.rules import RuleSet


@attrs.frozen
class Cached:
    """A cache entry: the latest version, or None when the database had no rule set of that name."""

    rule_set: RuleSet | None
    #: Seconds on the cache's monotonic clock.
    cached_at: float


class RuleSetCache:
    """Not thread-safe; one per process, used from its event loop (no awaits inside).

    ``monotonic`` gives seconds that never go back (tests pass a fake): the wall clock must not
    age entries, since a clock stepped back would keep a stale decision forever."""

    def __init__(
        self,
        max_age: timedelta = RULE_CACHE_MAX_AGE,
        max_entries: int = RULE_CACHE_MAX_ENTRIES,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: OrderedDict[str, Cached] = OrderedDict()
        self._monotonic = monotonic
        self._max_age = max_age
        self._max_entries = max_entries
        self._evictions = 0
        self._evicted_at: dict[str, int] = {}
        self._evicted_all_at = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def max_age(self) -> timedelta:
        return self._max_age

    def lookup(self, name: str) -> Cached | None:
        """The entry of ``name`` unless it is missing or older than the maximum age (then dropped)."""
        entry = self._entries.get(name)
        if entry is None:
            return None
        if self._monotonic() - entry.cached_at > self._max_age.total_seconds():
            del self._entries[name]
            return None
        self._entries.move_to_end(name)
        return entry

    def get(self, name: str) -> RuleSet | None:
        """The cached rule set of ``name``, if a version is cached and fresh."""
        entry = self.lookup(name)
        return entry.rule_set if entry is not None else None

    def ticket(self) -> int:
        """Take before reading the database; give it back to :meth:`offer`."""
        return self._evictions

    def offer(self, rule_set: RuleSet, ticket: int) -> bool:
        """Cache a version read from the database, unless its name was evicted since ``ticket``
        or a newer version is cached already. True when cached."""
        if self._evicted_since(rule_set.name, ticket):
            return False
        return self.insert(rule_set)

    def offer_absent(self, name: str, ticket: int) -> bool:
        """Remember that the database had no rule set ``name``, unless the name was evicted
        since ``ticket`` or a version is cached already. True when cached."""
        if self._evicted_since(name, ticket) or self.get(name) is not None:
            return False
        self._put(name, None)
        return True

    def insert(self, rule_set: RuleSet) -> bool:
        """Cache ``rule_set`` (this instance just created it) unless a newer version is cached."""
        cached = self.get(rule_set.name)
        if cached is not None and cached.version > rule_set.version:
            return False
        self._put(rule_set.name, rule_set)
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

    def _evicted_since(self, name: str, ticket: int) -> bool:
        return max(self._evicted_at.get(name, 0), self._evicted_all_at) > ticket

    def _put(self, name: str, rule_set: RuleSet | None) -> None:
        self._entries[name] = Cached(rule_set, self._monotonic())
        self._entries.move_to_end(name)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
