"""The former home of ``REGISTERED_TABLES``, ``AttachmentScanner``, now in :mod:`craig.usecases.attachments`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.attachments`.
"""

from craig.usecases.attachments import REGISTERED_TABLES, AttachmentScanner

__all__ = ["REGISTERED_TABLES", "AttachmentScanner"]
