"""The former home of ``ReadPartnerRecords``, ``ShowPartner``, now in :mod:`craig.usecases.exchange`.

Kept only so the composition root (``craig/entrypoints/container.py``) imports unchanged while
it is restructured; nothing else imports from here. Delete this module once the container
imports from :mod:`craig.usecases.exchange`.
"""

from craig.usecases.exchange import ReadPartnerRecords, ShowPartner

__all__ = ["ReadPartnerRecords", "ShowPartner"]
