"""Every tunable constant of Craig, in one place.

Units live in the type (``timedelta``) or in the name (``_BYTES``, ``_RPM``). Settings may
override some of these per deployment; the values here are the documented defaults.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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
#: A body larger than this is fingerprinted in a worker thread, so a large (if linear) canonical
#: form never holds the event loop while other requests wait.
FINGERPRINT_INLINE_MAX_BYTES: Final = 64 * 1024
#: How long a concurrent duplicate waits for the winner before answering 409 + Retry-After.
#: Never longer than the claim TTL.
IDEMPOTENCY_LOSER_WAIT_CEILING: Final = timedelta(seconds=10)
#: Fallback poll interval while a loser waits (LISTEN/NOTIFY normally wakes it sooner).
IDEMPOTENCY_LOSER_POLL_INTERVAL: Final = timedelta(milliseconds=250)
#: Responses larger than this are not stored; replays answer with an empty body.
IDEMPOTENCY_MAX_STORED_BODY_BYTES: Final = 1024 * 1024
#: Slots older than this are purged by the cleanup worker.
IDEMPOTENCY_RETENTION: Final = timedelta(hours=24)
#: The shortest retention a deployment may set (``CRAIG_IDEMPOTENCY__RETENTION_HOURS``): a retry
#: after its slot is purged runs the request again.
IDEMPOTENCY_MIN_RETENTION: Final = timedelta(hours=1)
#: Length bounds of an ``Idempotency-Key`` header value (printable ASCII).
IDEMPOTENCY_KEY_MAX_LENGTH: Final = 255
#: A slot marked ``failed`` keeps at most this much of its error's text.
IDEMPOTENCY_ERROR_DETAIL_MAX_CHARS: Final = 2000

# --- Transactional outbox ---------------------------------------------------------------
#: Rows a relay claims per batch.
OUTBOX_BATCH_SIZE: Final = 500
#: Relay poll interval when no NOTIFY arrives.
OUTBOX_POLL_INTERVAL: Final = timedelta(seconds=1)
#: Batches one worker process relays at once, each claiming aggregates of its own: while one
#: waits for its broker confirms, another claims or marks in PostgreSQL. One alone leaves the
#: broker idle during those steps (bench.outbox_relay: 0.75 of aio-pika's ceiling with one,
#: 0.81 with two, 0.74 with three on two cores).
OUTBOX_RELAYS_PER_PROCESS: Final = 2
#: Backoff after a failed publish: base, doubling, capped, with jitter.
OUTBOX_BACKOFF_BASE: Final = timedelta(seconds=1)
OUTBOX_BACKOFF_CAP: Final = timedelta(minutes=5)
#: Published rows older than this are purged.
OUTBOX_RETENTION: Final = timedelta(days=7)
#: Publishes one relay has waiting for their broker confirms at once, across aggregates (its
#: window; a batch of OUTBOX_BATCH_SIZE events fits in it whole).
OUTBOX_PUBLISH_CONCURRENCY: Final = 512
#: The error that stopped a delivery (an inbox row's ``last_error``, an outbox row's publish
#: failure) is stored cut to this length.
DELIVERY_ERROR_MAX_CHARS: Final = 2000

# --- Idempotent inbox -------------------------------------------------------------------
#: Failed retries before a message goes to the dead-letter exchange.
INBOX_MAX_RETRIES: Final = 5
INBOX_BACKOFF_BASE: Final = timedelta(seconds=1)
INBOX_BACKOFF_CAP: Final = timedelta(seconds=60)
#: Processed inbox rows older than this are purged.
INBOX_RETENTION: Final = timedelta(days=7)
#: The shortest retention a deployment may set (``CRAIG_INBOX__RETENTION_DAYS``): an event
#: delivered again after its row is purged is handled again.
INBOX_MIN_RETENTION: Final = timedelta(days=1)
#: A broker consumer that cannot settle a message (its re-publish to a retry queue or to the
#: dead-letter exchange fails) holds it this long before requeueing it, doubling per consecutive
#: failure on its queue, with equal jitter, up to the cap (below the broker's 15 s graceful stop).
BUS_SETTLE_BACKOFF_BASE: Final = timedelta(milliseconds=250)
BUS_SETTLE_BACKOFF_CAP: Final = timedelta(seconds=10)

# --- The event buses ------------------------------------------------------------------------
#: The in-process bus (memory and embedded profiles): how often a consumer looks for due
#: deliveries when nothing wakes it, how many it takes per look, and how long it owns them.
INPROCESS_BUS_POLL_INTERVAL: Final = timedelta(seconds=1)
INPROCESS_BUS_BATCH_SIZE: Final = 100
INPROCESS_BUS_LEASE: Final = timedelta(seconds=60)
#: Dead letters the in-process bus reads to find the ones a replay names by id.
INPROCESS_DEAD_LETTER_SCAN_MAX_ROWS: Final = 1_000_000
#: RabbitMQ: when the inbox itself cannot run (database down), the message comes back after this.
RABBIT_INFRASTRUCTURE_RETRY: Final = timedelta(seconds=5)
#: RabbitMQ: the ``x-last-error`` header of a retried or dead-lettered message is cut to this.
RABBIT_HEADER_ERROR_MAX_CHARS: Final = 1000
#: RabbitMQ: the lease of a broadcast subscription's retry queues (one set per instance): RabbitMQ
#: deletes them this long after they were last declared, so a dead instance's go away.
RABBIT_BROADCAST_QUEUE_EXPIRES_MS: Final = 60 * 60 * 1000
#: RabbitMQ: unacknowledged messages per consumer channel.
RABBIT_PREFETCH: Final = 32
#: RabbitMQ: longest wait for a publish's broker confirm.
RABBIT_PUBLISH_TIMEOUT: Final = timedelta(seconds=10)
#: RabbitMQ: how long a stopping broker lets handlers in flight finish.
RABBIT_GRACEFUL_STOP_TIMEOUT: Final = timedelta(seconds=15)
#: RabbitMQ: the readiness probe's ping.
RABBIT_PING_TIMEOUT: Final = timedelta(seconds=3)
#: RabbitMQ: longest wait for a connection, handshake included (a broker that accepts and never
#: answers is unavailable after this, not a start that hangs).
RABBIT_CONNECT_TIMEOUT: Final = timedelta(seconds=10)
#: RabbitMQ: upper bound on dead letters read in one operation (list, count, replay).
RABBIT_DEAD_LETTER_SCAN_MAX_MESSAGES: Final = 100_000

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

# --- Background workers -------------------------------------------------------------------
#: A worker pass that failed is retried after this, doubling up to the maximum.
WORKER_ERROR_BACKOFF_MIN: Final = timedelta(milliseconds=200)
WORKER_ERROR_BACKOFF_MAX: Final = timedelta(seconds=30)
#: Stopping, every worker loop gets this long to end its pass before it is cancelled.
WORKER_STOP_TIMEOUT: Final = timedelta(seconds=10)
#: A loop cancelled at that timeout gets this much longer to unwind (giving its database
#: connection back takes at most ``DATABASE_RELEASE_TIMEOUT``); then the process stops without it.
WORKER_CANCEL_GRACE: Final = timedelta(seconds=10)

# --- Operator views (`craig status`, `/metrics`) ------------------------------------------
#: Rows that pile up with history (sent or failed send jobs, stored idempotency responses,
#: processed or dead inbox rows) are counted exactly up to this many; above it the count is
#: PostgreSQL's estimate, so a scrape costs the same however long the history grows.
STATS_EXACT_COUNT_MAX_ROWS: Final = 10_000
#: ``/health/ready`` and ``/health/dependencies``: how long each dependency's check may take
#: (they run side by side, so a probe answers within about this), and how much of its error the
#: answer shows.
READINESS_CHECK_TIMEOUT: Final = timedelta(seconds=2)
READINESS_ERROR_MAX_CHARS: Final = 300
#: ``craig serve`` started without RabbitMQ or the object store: how soon it tries again, the
#: wait doubling per failure up to the maximum.
DEPENDENCY_RETRY_MIN: Final = timedelta(seconds=1)
DEPENDENCY_RETRY_MAX: Final = timedelta(seconds=30)
#: ``/metrics``: how long one database- or broker-backed gauge may take to refresh (they refresh
#: side by side; one that times out keeps its last value and the scrape goes on).
METRICS_REFRESH_TIMEOUT: Final = timedelta(seconds=3)
#: A worker is ready when every loop finished a pass within this many of its intervals, plus the
#: grace (a pass that did work runs again at once, so a busy loop is never late).
WORKER_READY_INTERVALS: Final = 3
WORKER_READY_GRACE: Final = timedelta(seconds=30)
#: The port ``craig worker`` serves ``/health/*`` and ``/metrics`` on (0: none).
WORKER_METRICS_PORT: Final = 9464

# --- HTTP -----------------------------------------------------------------------------------
#: Largest request body (``CRAIG_HTTP__MAX_BODY_BYTES``); upload routes have their own limit.
HTTP_MAX_BODY_BYTES: Final = 1024 * 1024
#: Distinct ``trusted_proxies`` settings whose parsed networks are kept (one per process in practice).
TRUSTED_PROXY_SETTINGS_CACHED: Final = 32
#: Route handlers whose declared query parameters are kept (an app has about a hundred).
ROUTE_HANDLERS_CACHED: Final = 1024

#: Client addresses whose normal form the audit trail keeps (each a few dozen bytes).
AUDIT_ADDRESSES_CACHED: Final = 4096
#: The associated-data heads (version, key id, table, column) the field cipher keeps built:
#: far more than the encrypted columns times the keys of a ring.
ASSOCIATED_DATA_HEADS_CACHED: Final = 1024

#: Container allocations between two collections of the youngest generation in a serving
#: process (CPython's default: 700); see craig.entrypoints.collector.
SERVING_GC_YOUNG_THRESHOLD: Final = 20_000

# --- Database -------------------------------------------------------------------------------
#: A process's connection pool (``CRAIG_DATABASE__POOL_SIZE`` + ``__MAX_OVERFLOW``): the most
#: connections one process opens. Each is opened when needed and kept until it has been unused
#: for DATABASE_IDLE_CONNECTION_LIFETIME, so under load the pool holds as many as the requests in
#: flight need (a pool that closed connections as they were given back opened one per request:
#: measured with ``bench.api`` at 32 connections, about two thirds of the rate).
DATABASE_POOL_SIZE: Final = 25
DATABASE_MAX_OVERFLOW: Final = 5
#: The pool of a ``PostgresDatabase`` built without settings (tests, benchmarks).
DATABASE_POOL_SIZE_WITHOUT_SETTINGS: Final = 10
DATABASE_MAX_OVERFLOW_WITHOUT_SETTINGS: Final = 10
#: Server-side ``statement_timeout`` of every pooled connection (``CRAIG_DATABASE__STATEMENT_TIMEOUT_MS``).
DATABASE_STATEMENT_TIMEOUT_MS: Final = 30_000
#: A pooled connection unused for this long is closed (the pool opens one again when needed).
DATABASE_IDLE_CONNECTION_LIFETIME: Final = timedelta(minutes=5)
#: How long a transaction waits for a pooled connection before answering 503.
DATABASE_ACQUIRE_TIMEOUT: Final = timedelta(seconds=30)
#: Closing the pool waits this long for connections in use, then closes them anyway.
DATABASE_POOL_CLOSE_TIMEOUT: Final = timedelta(seconds=10)
#: A connection given back while the server has not yet acknowledged a statement cancelled on
#: it (its caller was cancelled: a timeout, a client gone, a shutdown) waits this long for the
#: acknowledgement, then is closed. A server that answers acknowledges in milliseconds; one that
#: stopped answering held the caller, unbounded, in the pool's release.
DATABASE_RELEASE_TIMEOUT: Final = timedelta(seconds=5)
#: Statements each pooled connection keeps prepared (least recently used dropped first): more
#: than the distinct statements Craig runs, so in steady state none is prepared twice.
DATABASE_PREPARED_STATEMENTS_PER_CONNECTION: Final = 512
#: The LISTEN connection reconnects after this, doubling up to the maximum.
LISTEN_RECONNECT_DELAY_MIN: Final = timedelta(milliseconds=100)
LISTEN_RECONNECT_DELAY_MAX: Final = timedelta(seconds=5)
#: A dedicated raw connection that does not close politely within this is terminated.
RAW_CONNECTION_CLOSE_TIMEOUT: Final = timedelta(seconds=5)
#: The embedded server (``pg_ctl``, ``initdb``, ``psql`` run as subprocesses): how long each
#: step may take, and the margin the subprocess gets beyond ``pg_ctl``'s own wait.
EMBEDDED_POSTGRES_START_TIMEOUT: Final = timedelta(seconds=30)
EMBEDDED_POSTGRES_STOP_TIMEOUT: Final = timedelta(seconds=60)
EMBEDDED_POSTGRES_COMMAND_MARGIN: Final = timedelta(seconds=15)
EMBEDDED_POSTGRES_SETUP_TIMEOUT: Final = timedelta(seconds=60)
EMBEDDED_POSTGRES_INITDB_TIMEOUT: Final = timedelta(seconds=120)
EMBEDDED_POSTGRES_READY_POLL_INTERVAL: Final = timedelta(milliseconds=100)
#: A unix socket path must fit ``sun_path`` (108 bytes) with ``.s.PGSQL.NNNNN.lock`` appended;
#: a data directory with a longer path gets its socket under ``/tmp``.
EMBEDDED_POSTGRES_SOCKET_PATH_MAX_CHARS: Final = 100
#: Lines of the server's log quoted when it fails to start or stop.
EMBEDDED_POSTGRES_LOG_TAIL_LINES: Final = 20

# --- Attachments and their scanner ----------------------------------------------------------
ATTACHMENT_MAX_BYTES: Final = 25 * 1024 * 1024
ATTACHMENT_SCAN_GRACE: Final = timedelta(hours=1)
ATTACHMENT_SCAN_INTERVAL: Final = timedelta(minutes=5)

# --- Cases, contacts and attachments --------------------------------------------------------
#: Multipart framing accepted on top of ``attachments.max_bytes`` (boundaries, part headers,
#: the ``attachment_type`` field): the upload route's own request body limit.
ATTACHMENT_MULTIPART_OVERHEAD_BYTES: Final = 64 * 1024
#: The largest archive directory an office document (DOCX, XLSX, PPTX, ODT, ODS) may have: its
#: entries and its size in bytes. Real documents hold tens to a few thousand parts.
ZIP_MAX_ENTRIES: Final = 10_000
ZIP_MAX_DIRECTORY_BYTES: Final = 2 * 1024 * 1024
#: The most a text part (no filename) of an uploaded form may hold: its fields are short.
FORM_TEXT_PART_MAX_BYTES: Final = 64 * 1024
#: Longest stored file name in UTF-8 bytes: filesystems allow 255 per name, and the
#: filesystem store needs room for its temporary suffix.
ATTACHMENT_FILE_NAME_MAX_BYTES: Final = 200
ATTACHMENT_TYPE_MAX_LENGTH: Final = 100
#: Shortest grace a deployment may configure: younger pending uploads may still be writing.
ATTACHMENT_SCAN_MIN_GRACE: Final = timedelta(minutes=1)
#: Pending rows the scanner reconciles per registered table per pass.
ATTACHMENT_SCAN_BATCH_SIZE: Final = 500
#: Objects the store may refuse for good in one scanner pass (each row's own, say access denied
#: to it) before the scanner takes it to refuse every object and waits for the next pass.
ATTACHMENT_SCAN_MAX_REFUSALS: Final = 20
#: Object keys the orphan sweep examines per pass; the next pass resumes after the last one.
ATTACHMENT_ORPHAN_SWEEP_KEYS_PER_PASS: Final = 10_000
#: Keys checked against the database in one query by the orphan sweep.
ATTACHMENT_ORPHAN_CHECK_BATCH: Final = 1000
ATTACHMENT_DOWNLOAD_CHUNK_BYTES: Final = 256 * 1024
#: The ``reason`` of ``cases.contact_attachment_upload_failed`` is cut to this length.
ATTACHMENT_FAILURE_REASON_MAX_CHARS: Final = 500
#: A file name's extension longer than this is not kept as an extension.
ATTACHMENT_FILE_EXTENSION_MAX_CHARS: Final = 16
CONTACT_SUMMARY_MAX_LENGTH: Final = 20_000
#: A contact may be dated this far in the future (clock skew of the worker's device).
CONTACT_FUTURE_TOLERANCE: Final = timedelta(minutes=5)
#: The earliest a case may be opened or a contact dated (instant, UTC): nothing recorded in
#: casework happened earlier, and it keeps Python's ``datetime.min`` (which PostgreSQL stores as
#: ``-infinity`` and reads back without a zone) out of the database.
CASEWORK_EARLIEST_TIMESTAMP: Final = datetime(1900, 1, 1, tzinfo=UTC)
#: A case's ``opened_at`` may lie this far in the future (a case has always been openable with a
#: later date); the bound keeps ``datetime.max`` (PostgreSQL's ``infinity``) out of the database.
CASE_OPENED_FUTURE_TOLERANCE: Final = timedelta(days=366)
#: S3 client: fail fast on an unreachable endpoint, allow slow transfers, retry 5xx and failed
#: connections twice (a read timeout is final: a server silent that long is not asked again).
OBJECT_STORE_CONNECT_TIMEOUT: Final = timedelta(seconds=5)
OBJECT_STORE_READ_TIMEOUT: Final = timedelta(seconds=60)
#: S3 client: the read timeout of the store's checks (a bucket's existence, at start and in
#: readiness probes and ``craig status``), which carry no transfer.
OBJECT_STORE_CHECK_TIMEOUT: Final = timedelta(seconds=3)
OBJECT_STORE_RETRIES: Final = 2
#: The S3 client's backoff factor between retries (urllib3 waits ``factor * 2**(n-1)``).
OBJECT_STORE_RETRY_BACKOFF: Final = timedelta(milliseconds=200)
#: Connections the S3 client keeps per host.
OBJECT_STORE_MAX_CONNECTIONS: Final = 32
#: Longest object key, in UTF-8 bytes (S3's limit).
OBJECT_KEY_MAX_BYTES: Final = 1024
#: The filesystem store tries a put this often: a concurrent delete may remove an emptied parent
#: directory under it.
OBJECT_STORE_FILESYSTEM_PUT_ATTEMPTS: Final = 3
#: The filesystem store deletes a temporary file of a put this old when it starts (a crash left
#: it; a put in progress in another process is far younger).
OBJECT_STORE_FILESYSTEM_STALE_INCOMING: Final = timedelta(hours=1)
#: Keys the filesystem store reads per page of a listing (S3 answers 1000 per request): a page
#: holds at most this many entries per directory level in memory, never a directory or the tree.
OBJECT_STORE_LIST_PAGE_KEYS: Final = 1000

# --- Partner exchange --------------------------------------------------------------------
DEFAULT_PARTNER_RATE_LIMIT_RPM: Final = 60
#: Bounds of a partner's registration.
PARTNER_NAME_MAX_LENGTH: Final = 200
PARTNER_URL_MAX_LENGTH: Final = 2000
PARTNER_CLIENT_ID_MAX_LENGTH: Final = 500
PARTNER_CLIENT_SECRET_MAX_LENGTH: Final = 4000
PARTNER_RATE_LIMIT_MAX_RPM: Final = 1_000_000
#: Partner HTTP client (``CRAIG_EXCHANGE__CONNECT_TIMEOUT_SECONDS``, ``__READ_TIMEOUT_SECONDS``,
#: ``__MAX_CONNECTIONS``).
PARTNER_HTTP_CONNECT_TIMEOUT: Final = timedelta(seconds=5)
PARTNER_HTTP_READ_TIMEOUT: Final = timedelta(seconds=30)
PARTNER_HTTP_MAX_CONNECTIONS: Final = 50
#: Of a partner's error answer (or a transport error), this much is kept in ``last_error``.
PARTNER_ERROR_DETAIL_MAX_CHARS: Final = 300
#: Refresh an OAuth2 token this long before it expires.
TOKEN_REFRESH_LEAD_TIME: Final = timedelta(seconds=30)
#: Longest a partner request waits for a pooled connection: well below the refresh lead, so a
#: token checked fresh is still valid when the request finally goes out.
PARTNER_POOL_WAIT: Final = timedelta(seconds=5)
#: A request must start within this share of the time its token had left when it was checked
#: (pool wait plus connect); the rest is margin for writing it and for the partner's clock.
PARTNER_TOKEN_SEND_SHARE: Final = 0.5
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
#: A job's ``last_error`` is cut to this length (the partner's body may be long).
SEND_JOB_ERROR_MAX_CHARS: Final = 2000
#: A dispatch is abandoned this long before its lease ends (or a tenth of the lease, if less),
#: so its outcome is recorded while the claim is still its own.
SEND_DISPATCH_DEADLINE_MARGIN: Final = timedelta(seconds=5)
#: A worker's cache of partners (with their decrypted secrets) for its passes.
SEND_PARTNER_CACHE_TTL: Final = timedelta(seconds=30)
SEND_PARTNER_CACHE_MAX_ENTRIES: Final = 1024
#: Stopping, a send worker waits this long (in all) for dispatches in flight and a flush under
#: way, then records the outcomes: well inside ``WORKER_STOP_TIMEOUT``, which cancels the loop,
#: so the outcomes of sends that ended are recorded rather than sent again after their lease.
SEND_WORKER_FINISH_TIMEOUT: Final = timedelta(seconds=6)
#: A claimed job whose partner has no rate-limit slot within this is given back to the queue
#: (its attempt undone), so one slow-rate partner cannot occupy every dispatch slot for long.
SEND_MAX_RATE_WAIT: Final = timedelta(seconds=10)
#: An idle worker woken by NOTIFY on enqueue (it also polls) waits this long before claiming,
#: so a burst is claimed in full batches.
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
#: The most of a partner's answer that is read, decoded: the rest is dropped unread. A send's
#: verdict needs only the status and a few hundred characters; a token grant is small; a page of
#: records longer than this is refused (``upstream_deserialize``).
PARTNER_SEND_ANSWER_MAX_BYTES: Final = 64 * 1024
PARTNER_TOKEN_ANSWER_MAX_BYTES: Final = 64 * 1024
PARTNER_RECORDS_MAX_BYTES: Final = 8 * 1024 * 1024
#: A token endpoint's ``expires_in`` above this is read as this: a token is asked for again at
#: least once a day, whatever lifetime the partner claims.
PARTNER_TOKEN_MAX_LIFETIME: Final = timedelta(days=1)
#: How long a partner read (``fetch_page``) may wait for a rate-limit slot before a 503.
PARTNER_READ_MAX_RATE_WAIT: Final = timedelta(seconds=5)
#: Items of the partner's first records page shown in a partner's detail view.
PARTNER_RECORDS_PREVIEW_SIZE: Final = 5

# --- Foster homes and placements ------------------------------------------------------------
#: Attempts of one placement transaction when PostgreSQL reports a deadlock or serialization
#: failure; the last failure answers 409 ``concurrent-update`` (never a 5xx).
PLACEMENT_TRANSACTION_MAX_ATTEMPTS: Final = 5
#: Pause before retry n is n times this, scaled by a random factor in [1/2, 1].
PLACEMENT_RETRY_BACKOFF: Final = timedelta(milliseconds=20)
FOSTER_HOME_NAME_MAX_LENGTH: Final = 200
#: A foster home's largest capacity: what its INT column holds (both profiles refuse more, 422).
FOSTER_HOME_MAX_CAPACITY: Final = 2**31 - 1
#: Homes at capacity listed by name in ``craig status`` (the count is always exact).
STATUS_FULL_HOMES_SHOWN: Final = 10

# --- Public intake, triage rule sets, field encryption -------------------------------------
#: The rule set that scores every public referral (seeded by migration 0009).
INTAKE_TRIAGE_RULE_SET: Final = "intake-triage"
#: Largest ``POST /intake/referrals`` body: a form, never a file.
INTAKE_MAX_BODY_BYTES: Final = 64 * 1024
#: The window of ``intake.rate_limit_per_minute`` (GCRA: up to the limit at once, then evenly).
INTAKE_RATE_WINDOW: Final = timedelta(minutes=1)
#: Referrals accepted per client per minute (``CRAIG_INTAKE__RATE_LIMIT_PER_MINUTE``).
INTAKE_RATE_LIMIT_PER_MINUTE: Final = 10
#: A client's rate-limit bucket idle this long limits no one; the cleanup worker deletes it.
INTAKE_RATE_LIMIT_RETENTION: Final = timedelta(hours=1)
#: Per-client limits count an IPv6 client per network of this prefix length (IPv4: per address).
CLIENT_RATE_LIMIT_IPV6_PREFIX_BITS: Final = 64
#: How long the captcha provider's siteverify may take before intake answers 503.
CAPTCHA_VERIFY_TIMEOUT: Final = timedelta(seconds=5)
REPORTER_NAME_MAX_LENGTH: Final = 200
REPORTER_EMAIL_MAX_LENGTH: Final = 254
#: A reporter's phone number: at most this many characters, at least this many digits.
REPORTER_PHONE_MAX_LENGTH: Final = 32
REPORTER_PHONE_MIN_DIGITS: Final = 5
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
#: The most ``craig keys rotate --batch-size`` takes: a batch is one transaction, whose row locks
#: the application's writes of those rows wait for, within the statement timeout.
KEY_ROTATION_MAX_BATCH_SIZE: Final = 10_000

# --- The operator command line ----------------------------------------------------------------
#: A progress bar on a terminal is redrawn at most this often.
PROGRESS_REDRAW_INTERVAL: Final = timedelta(milliseconds=100)
#: Piped (a log file, CI), progress is one line per task at most this often, plus the last.
PROGRESS_LINE_INTERVAL: Final = timedelta(seconds=5)
PROGRESS_BAR_WIDTH_CHARS: Final = 30
PROGRESS_LABEL_WIDTH_CHARS: Final = 32
#: ``craig serve --workers``: at most this many HTTP server processes.
SERVE_MAX_WORKERS: Final = 64
#: ``craig --help`` wraps at this width.
CLI_HELP_WIDTH_CHARS: Final = 100
#: ``craig config``: the value column is at least this wide, and widens for values up to the maximum.
CONFIG_VALUE_MIN_WIDTH_CHARS: Final = 24
CONFIG_VALUE_MAX_WIDTH_CHARS: Final = 48
#: ``craig dlx list`` and ``craig dlx replay`` take at most this many letters unless told.
DLX_LIST_DEFAULT_LIMIT: Final = 100
#: What ``craig attachments failed`` and ``craig exchange failed`` list unless told (``--limit``).
FAILED_LIST_DEFAULT_LIMIT: Final = 100
#: The most they list at once (a larger ``--limit`` is a usage error).
FAILED_LIST_MAX_LIMIT: Final = 10_000
DLX_REPLAY_DEFAULT_LIMIT: Final = 1000
#: The most unrouted events one ``craig unrouted`` run looks at (the oldest), and its largest ``--limit``.
UNROUTED_SCAN_MAX_EVENTS: Final = 100_000
#: Rows an in-process take of unrouted events reads at once (it pages through the scan above).
UNROUTED_TAKE_PAGE_ROWS: Final = 500
#: ``craig token``: a development token's default lifetime.
DEV_TOKEN_LIFETIME: Final = timedelta(hours=1)

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
#: The furthest an offset page (``page``/``per_page``) may start: beyond any list Craig holds, and
#: within what PostgreSQL's OFFSET takes (a page number near 2**63 overflowed it: a 422 that
#: blamed the stored data).
MAX_PAGE_OFFSET: Final = 2**31 - 1
#: The largest number a stored integer column holds (a rule set's version): a larger one in a
#: request names nothing, and is answered as such before any query.
MAX_STORED_INTEGER: Final = 2**31 - 1
#: Longest opaque cursor accepted (a cursor holds a sort key and its MAC, well under this).
CURSOR_MAX_LENGTH: Final = 1024

# --- Bearer tokens from a JWKS ----------------------------------------------------------------
#: The key set is fetched at most once per this interval, however many unknown ``kid``s arrive.
JWKS_REFRESH_INTERVAL: Final = timedelta(seconds=60)
#: The whole fetch (connect, headers, body) of the key set.
JWKS_FETCH_TIMEOUT: Final = timedelta(seconds=5)
#: A key set larger than this is refused (a real one holds a handful of keys in a few KiB).
JWKS_MAX_BYTES: Final = 256 * 1024

# --- Audit trail ----------------------------------------------------------------------------
#: Entries are kept at least this long (``CRAIG_AUDIT__RETENTION_DAYS``; 7 years). The database
#: refuses to delete younger entries whatever the setting says (see migration 0016).
AUDIT_RETENTION: Final = timedelta(days=2557)
#: The sealer looks for unsealed entries this often; an entry is sealed at most about this long
#: after its transaction commits (well inside the promised 60 s).
AUDIT_SEAL_INTERVAL: Final = timedelta(seconds=5)
#: Entries one sealing transaction appends to the chain; a full batch runs the next one at once.
AUDIT_SEAL_BATCH_SIZE: Final = 1000
#: Chain links ``craig audit verify`` reads per query.
AUDIT_VERIFY_PAGE_SIZE: Final = 5000
#: Ids one entry may carry (a list call records the ids it returned; pages hold at most 200).
AUDIT_MAX_RESOURCE_IDS: Final = 1000
#: Names of changed fields one entry may carry.
AUDIT_MAX_CHANGED_FIELDS: Final = 100
#: Free text from outside (a name from a token, a request id from a header, an id from a path)
#: is cut to this many characters, control characters removed, so recording never fails on it.
AUDIT_TEXT_MAX_LENGTH: Final = 200
#: ``craig audit verify`` reports (exit 1) committed entries still unsealed after this long: the
#: sealer is not running, or links were cut from the chain.
AUDIT_UNSEALED_ALERT: Final = timedelta(minutes=10)
#: Clock skew tolerated on a token's ``exp``/``nbf`` (``CRAIG_AUTH__LEEWAY_SECONDS``).
JWT_LEEWAY: Final = timedelta(seconds=30)
#: Tokens a process remembers as verified (a client sends the same token with each request, and
#: checking its signature was about a tenth of a request's CPU). One is served from memory only
#: while it is unexpired and signed by a key still in force; the oldest are forgotten first.
JWT_VERIFIED_CACHE_SIZE: Final = 4096
#: A production HS256 secret shorter than this is refused at startup.
JWT_SECRET_MIN_BYTES: Final = 32
#: Random bytes of the JWT secret the embedded and memory profiles generate on first run.
GENERATED_JWT_SECRET_BYTES: Final = 48
