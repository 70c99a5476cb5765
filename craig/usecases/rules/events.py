"""The event that keeps every instance's decision cache true: staged by :class:`CreateRuleSet`,
consumed by :class:`EvictOnInvalidation` on every other instance."""

from __future__ import annotations

SOURCE = "craig-rules"
CACHE_INVALIDATED = "rules.cache_invalidated"
