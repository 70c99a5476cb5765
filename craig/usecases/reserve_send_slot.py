"""The former home of ``ReserveSendSlot``, now in :mod:`craig.usecases.exchange`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.exchange`.
"""

from craig.usecases.exchange import ReserveSendSlot

__all__ = ["ReserveSendSlot"]
