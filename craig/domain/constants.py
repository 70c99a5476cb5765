"""Every tunable constant of Craig, in one place (seed: "Constants (seed)").

Units live in the type (``timedelta``) or in the name (``_BYTES``, ``_RPM``). Settings may
override some of these per deployment; the values here are the documented defaults.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

# --- Idempotent writes ---------------------------------------------------------------------
#: How long a ``processing`` claim is owned before another request may recover it. A 30 s
#: ceiling bounds loser-wait plus recovery without bouncing clients to 409. A live owner
#: extends its claim while its handler runs, so only a dead owner's claim runs out.
IDEMPOTENCY_CLAIM_TTL: Final = timedelta(seconds=30)
#: A live owner extends its claim this many times per claim TTL (every third of it).
IDEMPOTENCY_HEARTBEATS_PER_CLAIM_TTL: Final = 3
#: Numbers whose plain decimal form needs more padding zeros than this are fingerprinted in
#: exponent form (``1e400``): the canonical text stays as long as the input plus a constant.
#: Every number JavaScript or Python prints without an exponent stays in plain form.
FINGERPRINT_NUMBER_MAX_PADDING_ZEROS: Final = 21
#: Decimal digits of a JSON number's exponent that the fingerprint reads (beyond: raw bytes).
FINGERPRINT_NUMBER_MAX_EXPONENT_DIGITS: Final = 18
#: JSON nested deeper than this is fingerprinted as raw bytes (the canonical form recurses).
FINGERPRINT_JSON_MAX_DEPTH: Final = 256
#: A multipart body with more parts, or more bytes of part headers in all, is fingerprinted as
#: raw bytes (the form parser refuses more than 1000 parts anyway).
FINGERPRINT_MULTIPART_MAX_PARTS: Final = 1000
FINGERPRINT_MULTIPART_MAX_HEADER_BYTES: Final = 64 * 1024
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
#: Exchange transactions whose every job was sent longer ago than this are purged with their jobs.
EXCHANGE_RETENTION: Final = timedelta(days=30)
#: A broadcast consumer's inbox rows (``<consumer>@<instance>``) still unprocessed (or dead) after
#: this long are purged: they belong to an instance that is gone (its id dies with its process),
#: and an event that old means nothing to a per-instance cache anyway.
INBOX_BROADCAST_RETENTION: Final = timedelta(days=1)

# --- Operator views (`craig status`, `/metrics`) ------------------------------------------
#: Rows that pile up with history (sent or failed send jobs, stored idempotency responses,
#: processed or dead inbox rows) are counted exactly up to this many; above it the count is
#: PostgreSQL's estimate, so a scrape costs the same however long the history grows.
STATS_EXACT_COUNT_MAX_ROWS: Final = 10_000

# --- Attachments (seed: AttachmentScanner) --------------------------------------------------
ATTACHMENT_MAX_BYTES: Final = 25 * 1024 * 1024
ATTACHMENT_SCAN_GRACE: Final = timedelta(hours=1)
ATTACHMENT_SCAN_INTERVAL: Final = timedelta(minutes=5)

# --- Cases, contacts and attachments (issue 5) ----------------------------------------------
#: Multipart framing accepted on top of ``attachments.max_bytes`` (boundaries, part headers,
#: the ``attachment_type`` field): the upload route's own request body limit.
ATTACHMENT_MULTIPART_OVERHEAD_BYTES: Final = 64 * 1024
#: Longest stored file name in UTF-8 bytes: filesystems allow 255 per name, and the
#: filesystem store needs room for its temporary suffix.
ATTACHMENT_FILE_NAME_MAX_BYTES: Final = 200
ATTACHMENT_TYPE_MAX_LENGTH: Final = 100
#: Shortest grace a deployment may configure: younger pending uploads may still be writing.
ATTACHMENT_SCAN_MIN_GRACE: Final = timedelta(minutes=1)
#: Pending rows the scanner reconciles per registered table per pass.
ATTACHMENT_SCAN_BATCH_SIZE: Final = 500
#: Object keys the orphan sweep examines per pass; the next pass resumes after the last one.
ATTACHMENT_ORPHAN_SWEEP_KEYS_PER_PASS: Final = 10_000
#: Keys checked against the database in one query by the orphan sweep.
ATTACHMENT_ORPHAN_CHECK_BATCH: Final = 1000
ATTACHMENT_DOWNLOAD_CHUNK_BYTES: Final = 256 * 1024
CONTACT_SUMMARY_MAX_LENGTH: Final = 20_000
#: A contact may be dated this far in the future (clock skew of the worker's device).
CONTACT_FUTURE_TOLERANCE: Final = timedelta(minutes=5)
#: S3 client: fail fast on an unreachable endpoint, allow slow transfers, retry 5xx twice.
OBJECT_STORE_CONNECT_TIMEOUT: Final = timedelta(seconds=5)
OBJECT_STORE_READ_TIMEOUT: Final = timedelta(seconds=60)
OBJECT_STORE_RETRIES: Final = 2
#: Keys the filesystem store reads per page of a listing (S3 answers 1000 per request), so a
#: listing holds one page in memory, never the whole tree.
OBJECT_STORE_LIST_PAGE_KEYS: Final = 1000

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
#: A partner's ``Retry-After`` longer than the backoff is honoured, up to this ceiling.
SEND_RETRY_AFTER_CAP: Final = timedelta(hours=1)
#: Expired leases a worker returns to the queue per pass, and how often it looks for them.
SEND_RECOVER_BATCH: Final = 100
SEND_RECOVER_INTERVAL: Final = timedelta(seconds=1)
#: A claimed job whose partner has no rate-limit slot within this is given back to the queue
#: (its attempt undone), so one slow-rate partner cannot occupy every dispatch slot for long.
SEND_MAX_RATE_WAIT: Final = timedelta(seconds=10)
#: Not in the seed (which only polls): an idle worker woken by NOTIFY on enqueue waits this long
#: before claiming, so a burst is claimed in full batches.
SEND_WAKE_LINGER: Final = timedelta(milliseconds=5)
#: A finished dispatch's outcome waits for the worker's next pass at most this long before it
#: is recorded on its own.
SEND_OUTCOME_FLUSH_DELAY: Final = timedelta(milliseconds=10)
#: A flush whose every outcome was busy (rows held by another transaction) waits this long.
SEND_BUSY_RETRY_DELAY: Final = timedelta(milliseconds=50)
#: How often a worker looks for sends past their deadline (at most this late: well inside the
#: 5 s the dispatch deadline leaves before the lease ends).
SEND_DEADLINE_CHECK_INTERVAL: Final = timedelta(milliseconds=250)
#: Waits between the tries to record outcomes while the database is away; then they are
#: dropped, and their leases bring the jobs back.
SEND_RECORD_RETRY_DELAYS: Final = (
    timedelta(milliseconds=200),
    timedelta(milliseconds=500),
    timedelta(seconds=1),
    timedelta(seconds=2),
    timedelta(seconds=5),
)
#: Partner ids one exchange transaction may address; payload size it may carry.
EXCHANGE_MAX_PARTNERS_PER_TRANSACTION: Final = 50
EXCHANGE_MAX_PAYLOAD_BYTES: Final = 256 * 1024
#: Token lifetime assumed when a partner's token endpoint omits ``expires_in``.
PARTNER_TOKEN_DEFAULT_LIFETIME: Final = timedelta(minutes=5)
#: How long a partner read (``fetch_page``) may wait for a rate-limit slot before a 503.
PARTNER_READ_MAX_RATE_WAIT: Final = timedelta(seconds=5)
#: Items of the partner's first records page shown in a partner's detail view.
PARTNER_RECORDS_PREVIEW_SIZE: Final = 5

# --- Foster homes and placements (issue 6) --------------------------------------------------
#: Attempts of one placement transaction when PostgreSQL reports a deadlock or serialization
#: failure; the last failure answers 409 ``concurrent-update`` (never a 5xx).
PLACEMENT_TRANSACTION_MAX_ATTEMPTS: Final = 5
#: Pause before retry n is n times this, scaled by a random factor in [1/2, 1].
PLACEMENT_RETRY_BACKOFF: Final = timedelta(milliseconds=20)
FOSTER_HOME_NAME_MAX_LENGTH: Final = 200
#: Homes at capacity listed by name in ``craig status`` (the count is always exact).
STATUS_FULL_HOMES_SHOWN: Final = 10

# --- Public intake, triage rule sets, field encryption (issue 8) ---------------------------
#: The rule set that scores every public referral (seeded by migration 0009).
INTAKE_TRIAGE_RULE_SET: Final = "intake-triage"
#: Largest ``POST /intake/referrals`` body: a form, never a file.
INTAKE_MAX_BODY_BYTES: Final = 64 * 1024
#: The window of ``intake.rate_limit_per_minute`` (GCRA: up to the limit at once, then evenly).
INTAKE_RATE_WINDOW: Final = timedelta(minutes=1)
#: A client's rate-limit bucket idle this long limits no one; the cleanup worker deletes it.
INTAKE_RATE_LIMIT_RETENTION: Final = timedelta(hours=1)
#: Per-client limits count an IPv6 client per network of this prefix length (IPv4: per address).
CLIENT_RATE_LIMIT_IPV6_PREFIX_BITS: Final = 64
#: How long the captcha provider's siteverify may take before intake answers 503.
CAPTCHA_VERIFY_TIMEOUT: Final = timedelta(seconds=5)
REPORTER_NAME_MAX_LENGTH: Final = 200
REPORTER_EMAIL_MAX_LENGTH: Final = 254
CHILD_FIRST_NAME_MAX_LENGTH: Final = 100
#: Child welfare follows young people into extended care up to this age.
CHILD_MAX_AGE_YEARS: Final = 21
REFERRAL_CONCERN_MAX_LENGTH: Final = 5000
REFERRAL_LOCATION_MAX_LENGTH: Final = 500
#: Bounds of a rule document, so evaluating one stays cheap and its validation cannot be abused.
RULE_SET_MAX_RULES: Final = 200
RULE_CONDITION_MAX_DEPTH: Final = 16
RULE_SET_MAX_CONDITIONS: Final = 2000
RULE_VALUE_LIST_MAX_LENGTH: Final = 1000
RULE_DECISION_MAX_LENGTH: Final = 200
RULE_FACT_NAME_MAX_LENGTH: Final = 100
#: Rule sets one instance keeps compiled in its decision cache (least recently used go first).
RULE_CACHE_MAX_ENTRIES: Final = 1000
#: No decision-cache entry is served older than this (``CRAIG_RULES__CACHE_MAX_AGE_SECONDS``),
#: whether or not its invalidation event arrived.
RULE_CACHE_MAX_AGE: Final = timedelta(seconds=60)
#: Rows ``craig keys rotate`` re-encrypts per transaction.
KEY_ROTATION_BATCH_SIZE: Final = 500

# --- The operator command line ----------------------------------------------------------------
#: A progress bar on a terminal is redrawn at most this often.
PROGRESS_REDRAW_INTERVAL: Final = timedelta(milliseconds=100)
#: Piped (a log file, CI), progress is one line per task at most this often, plus the last.
PROGRESS_LINE_INTERVAL: Final = timedelta(seconds=5)
PROGRESS_BAR_WIDTH_CHARS: Final = 30
PROGRESS_LABEL_WIDTH_CHARS: Final = 32

# --- Cases ------------------------------------------------------------------------------------
CASE_TITLE_MAX_LENGTH: Final = 300
CASE_FAMILY_NAME_MAX_LENGTH: Final = 200

#: How long a closure or reopening reason may be.
CASE_REASON_MAX_LENGTH: Final = 2000

# --- The intake queue -------------------------------------------------------------------------
#: How soon a referral must be screened, by priority (``CRAIG_SCREENING__*_HOURS`` override them).
REFERRAL_RESPONSE_TIME_URGENT: Final = timedelta(hours=24)
REFERRAL_RESPONSE_TIME_HIGH: Final = timedelta(hours=72)
REFERRAL_RESPONSE_TIME_MEDIUM: Final = timedelta(days=5)
#: Low priority, and referrals no rule scored.
REFERRAL_RESPONSE_TIME_LOW: Final = timedelta(days=10)
#: A configured response time longer than this is refused at startup (hours taken for days).
REFERRAL_RESPONSE_TIME_MAX: Final = timedelta(days=366)
#: Length bounds of a screen-out reason.
SCREENING_REASON_MAX_LENGTH: Final = 2000

# --- Pagination -----------------------------------------------------------------------------
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 200
#: Longest opaque cursor accepted (a cursor holds a sort key and its MAC, well under this).
CURSOR_MAX_LENGTH: Final = 1024

# --- Bearer tokens from a JWKS ----------------------------------------------------------------
#: The key set is fetched at most once per this interval, however many unknown ``kid``s arrive.
JWKS_REFRESH_INTERVAL: Final = timedelta(seconds=60)
#: The whole fetch (connect, headers, body) of the key set.
JWKS_FETCH_TIMEOUT: Final = timedelta(seconds=5)
#: A key set larger than this is refused (a real one holds a handful of keys in a few KiB).
JWKS_MAX_BYTES: Final = 256 * 1024
