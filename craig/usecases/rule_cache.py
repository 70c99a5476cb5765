"""The former home of ``RuleSetCache``, now in :mod:`craig.usecases.rules`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.rules`.
"""

from craig.usecases.rules import RuleSetCache

__all__ = ["RuleSetCache"]
