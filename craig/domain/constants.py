"""Every tunable constant of Craig, in one place (seed: "Constants (seed)").

Units live in the type (``timedelta``) or in the name (``_BYTES``, ``_RPM``). Settings may
override some of these per deployment; the values here are the documented defaults.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

# --- Idempotent writes (seed: idempotency_atomic_claim) ------------------------------------
#: How long a ``processing`` claim is owned before another request may recover it. The seed's
#: 30 s ceiling bounds loser-wait plus recovery without bouncing clients to 409.
IDEMPOTENCY_CLAIM_TTL: Final = timedelta(seconds=30)
#: How long a concurrent duplicate waits for the winner before answering 409 + Retry-After.
#: Never longer than the claim TTL.
IDEMPOTENCY_LOSER_WAIT_CEILING: Final = timedelta(seconds=10)
#: Fallback poll interval while a loser waits (LISTEN/NOTIFY normally wakes it sooner).
IDEMPOTENCY_LOSER_POLL_INTERVAL: Final = timedelta(milliseconds=250)
#: Responses larger than this are not stored; replays answer with an empty body.
IDEMPOTENCY_MAX_STORED_BODY_BYTES: Final = 1024 * 1024
#: Slots older than this are purged by the cleanup worker.
IDEMPOTENCY_RETENTION: Final = timedelta(hours=24)
#: Length bounds of an ``Idempotency-Key`` header value (printable ASCII).
IDEMPOTENCY_KEY_MAX_LENGTH: Final = 255

# --- Transactional outbox ---------------------------------------------------------------
#: Rows a relay claims per batch.
OUTBOX_BATCH_SIZE: Final = 500
#: Relay poll interval when no NOTIFY arrives.
OUTBOX_POLL_INTERVAL: Final = timedelta(seconds=1)
#: Backoff after a failed publish: base, doubling, capped, with jitter.
OUTBOX_BACKOFF_BASE: Final = timedelta(seconds=1)
OUTBOX_BACKOFF_CAP: Final = timedelta(minutes=5)
#: Published rows older than this are purged.
OUTBOX_RETENTION: Final = timedelta(days=7)

# --- Idempotent inbox (seed: inbox_retry_semantics) -------------------------------------
#: Failed retries before a message goes to the dead-letter exchange.
INBOX_MAX_RETRIES: Final = 5
INBOX_BACKOFF_BASE: Final = timedelta(seconds=1)
INBOX_BACKOFF_CAP: Final = timedelta(seconds=60)
#: Processed inbox rows older than this are purged.
INBOX_RETENTION: Final = timedelta(days=7)

# --- Purging ------------------------------------------------------------------------------
#: Rows deleted per statement by the cleanup worker, so purges never hold long locks.
PURGE_BATCH_SIZE: Final = 1000
CLEANUP_INTERVAL: Final = timedelta(minutes=1)

# --- Attachments (seed: AttachmentScanner) --------------------------------------------------
ATTACHMENT_MAX_BYTES: Final = 25 * 1024 * 1024
ATTACHMENT_SCAN_GRACE: Final = timedelta(hours=1)
ATTACHMENT_SCAN_INTERVAL: Final = timedelta(minutes=5)

# --- Partner exchange (seed: send_worker.rs) ---------------------------------------------
DEFAULT_PARTNER_RATE_LIMIT_RPM: Final = 60
#: Refresh an OAuth2 token this long before it expires.
TOKEN_REFRESH_LEAD_TIME: Final = timedelta(seconds=30)
SEND_POLL_INTERVAL: Final = timedelta(seconds=1)
SEND_MAX_CONCURRENCY: Final = 8
#: 1 immediate attempt + 5 retries, about 32 minutes in all.
SEND_MAX_ATTEMPTS: Final = 6
SEND_BACKOFF_SCHEDULE: Final = (
    timedelta(seconds=5),
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(minutes=30),
)
#: How long a claimed job is owned before another worker may take it back.
SEND_LEASE: Final = timedelta(seconds=60)

# --- Pagination -----------------------------------------------------------------------------
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 200
