"""The former home of ``RotateKeys``, now in :mod:`craig.usecases.operations`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.operations`.
"""

from craig.usecases.operations import RotateKeys

__all__ = ["RotateKeys"]
