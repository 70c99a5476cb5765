"""The former home of ``GetContact``, ``ListContacts``, ``RecordContact``, now in :mod:`craig.usecases.cases`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.cases`.
"""

from craig.usecases.cases import GetContact, ListContacts, RecordContact

__all__ = ["GetContact", "ListContacts", "RecordContact"]
