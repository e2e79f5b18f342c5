/**
 * Input bounds. Each is a bound a user can rely on and an attacker cannot
 * stretch: they keep keys short, records bounded and log lines readable.
 * (Kind limits, the feature that caps how many jobs of a kind run, are
 * `kind-limits.ts`.)
 */

/** A kind is 1-255 UTF-8 bytes of printable, non-space characters. */
export const MAX_KIND_BYTES = 255;
/** An idempotency key is 1-255 UTF-8 bytes. It is part of an index key, so it stays short. */
export const MAX_IDEMPOTENCY_KEY_BYTES = 255;
/** A supersede key is 1-255 UTF-8 bytes, like an idempotency key: it is part of an index key too. */
export const MAX_SUPERSEDE_KEY_BYTES = 255;
/** An ordered key is 1-255 UTF-8 bytes, like the other keys: it is part of an index key too. */
export const MAX_ORDER_KEY_BYTES = 255;
/** A tenant id is 1-128 UTF-8 bytes of printable, non-space characters. */
export const MAX_TENANT_BYTES = 128;
/** A worker id is 1-255 UTF-8 bytes. */
export const MAX_WORKER_ID_BYTES = 255;
/** Error messages kept in a job's events are cut to this many characters. */
export const MAX_EVENT_DETAIL_CHARS = 1_024;
/**
 * A job keeps at most this many events. Consecutive heartbeats and checkpoints fold
 * into one event with a count, so only real transitions use slots; past the bound the
 * oldest events after `enqueued` fold into one `stats` event. With the detail cap,
 * the audit trail of a record stays under ~70 KiB however long the job lives.
 */
export const MAX_EVENTS = 64;
/** Jobs in one batch enqueue, and successors in one chained completion. */
export const MAX_BATCH_JOBS = 10_000;
/** Jobs one lease call may take at once. */
export const MAX_LEASE_BATCH = 1_000;
/** Items in one CompleteBatch or FailBatch call. */
export const MAX_SETTLE_BATCH = 1_000;
/** Credit a worker may hold unused on a work session: far above any sane concurrency, low enough to bound a session's pushes. */
export const MAX_WORK_CREDIT = 10_000;
/**
 * Requests of one Produce stream the server holds at once (read, not yet answered). Past it the
 * server stops reading the stream, so HTTP/2 flow control holds the producer back: a stream
 * costs the server at most this many requests' memory. The SDK coalesces the enqueues of one
 * event-loop turn into one request, so even 100 awaited enqueues at once need a few.
 */
export const MAX_PRODUCE_IN_FLIGHT = 100;
/** Rows one list call may return. */
export const MAX_LIST_LIMIT = 1_000;
/**
 * A job's W3C `tracestate` is at most this many characters: the limit the Trace Context
 * recommendation lets a vendor cut a longer header to, so a propagator's value fits whole.
 */
export const MAX_TRACESTATE_CHARS = 512;
/** A job's `traceparent`: a version-00 header is 55 characters; a later version may append fields. */
export const MAX_TRACEPARENT_CHARS = 256;
/** The prefix every system-scope kind carries, and no tenant kind may. */
export const SYSTEM_KIND_PREFIX = 'system:';

/**
 * The longest duration a setting or a job may add to the clock: ten years (of 365 days), in seconds.
 * Times are microseconds since the epoch in a double, exact up to 2^53 - 1 µs (June 2255); a
 * time a record holds must stay below that, or the record no longer reads back (its integer
 * decodes rounded, and is refused as corrupt). From any time before {@link MAX_TIMESTAMP_MICROS},
 * ten years more stays far inside it (2210).
 */
export const MAX_DURATION_SECS = 315_360_000;
/**
 * The latest time a job may be scheduled for (`not_before`): 2200-01-01T00:00:00Z, in µs. A
 * record's times stay below 2^53 µs as long as the clock reads before this too.
 */
export const MAX_TIMESTAMP_MICROS = Date.UTC(2200, 0, 1) * 1000;
/**
 * The longest a timer can wait: Node's `setTimeout` takes at most 2^31 - 1 ms (24.8 days) and
 * fires a longer one after 1 ms instead, so a longer interval would run a service in a busy loop.
 */
export const MAX_TIMER_MS = 2_147_483_647;
/** An attempt ceiling, a job's own or `jobs.max_attempts`, is at most this. */
export const MAX_ATTEMPTS_LIMIT = 1_000_000;
/**
 * `jobs.max_payload_bytes` is at most 16 MiB: a job travels with its payload and its
 * continuation (each up to the limit) in one gRPC message of at most 64 MiB.
 */
export const MAX_PAYLOAD_BYTES_LIMIT = 16 * 1024 * 1024;
/**
 * `jobs.max_result_bytes` is at most 16 MiB: a job shown on the wire carries its payload, its
 * continuation and its result, each up to 16 MiB, in one gRPC message of at most 64 MiB.
 */
export const MAX_RESULT_BYTES_LIMIT = 16 * 1024 * 1024;
/**
 * A progress report is JSON text of at most this many characters: it is for people to read on
 * a job page, and every heartbeat that carries one rewrites it with the record.
 */
export const MAX_PROGRESS_CHARS = 4_096;
/**
 * `[jobs.kinds."<prefix>"]` tables at most. A policy is found by looking up each prefix of a
 * kind (at most 255) in a map, so the count costs nothing per lookup; the bound keeps a
 * configuration (and the dashboard that lists it) readable.
 */
export const MAX_KIND_POLICIES = 1_000;
/**
 * Schedules one scope may hold. Every schedule is a row the scheduler reads when it is due, so the
 * bound keeps one tenant from filling the due index (and a listing) with its own.
 */
export const MAX_SCHEDULES_PER_SCOPE = 1_000;
/**
 * Kind limits (`core/kind-limits.ts`) the whole store may hold. They are global, set by operators
 * only, and every claim consults each limited lane, so the bound keeps a claim's cost fixed.
 */
export const MAX_KIND_LIMITS = 100;
/** The largest concurrency a kind limit may set: far more jobs than one store leases at once. */
export const MAX_LIMIT_CONCURRENCY = 1_000_000;
/** A schedule name is 1-128 UTF-8 bytes of printable, non-space characters, like a tenant id. */
export const MAX_SCHEDULE_NAME_BYTES = 128;
/** A cron expression is at most this many characters: seven fields with lists fit easily. */
export const MAX_CRON_CHARS = 256;
/** An IANA time zone name (`America/Argentina/ComodRivadavia` is the longest, at 32). */
export const MAX_TIMEZONE_CHARS = 64;

/** Tenant limits a store holds at most (`core/tenant-limits.ts`): each is read by claims while any exists. */
export const MAX_TENANT_LIMITS = 10_000;
/** The largest tenant weight: 1,000 turns to one is more skew than any use needs. */
export const MAX_TENANT_WEIGHT = 1_000;
