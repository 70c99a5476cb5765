"""The former home of ``DeadLetterOperations``, now in :mod:`craig.usecases.events`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.events`.
"""

from craig.usecases.events import DeadLetterOperations

__all__ = ["DeadLetterOperations"]
