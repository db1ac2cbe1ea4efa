// Package retry is the Azure partitioning article's retry policy: retry only
// transient failures, waiting an exponentially growing, jittered delay
// between a floor and a ceiling:
//
//	y = Rand(0.8z, 1.2z) * (2^x - 1)
//	y = Min(zmin + y, zmax)
//
// where z is Policy.Default, zmin Policy.Min, zmax Policy.Max and x the retry
// number (1 for the first retry). Retries let an application ride through
// partition load balancing, during which a partition is offline for a few
// seconds, and through server-busy throttling.
//
// It is the one retry mechanism of tablekit, in two forms:
//
//   - ApplyTo installs a Policy into an SDK client's options (aztables,
//     azqueue, azblob) in place of azcore's built-in retry. azcore already
//     retries with a different formula (jitter 0.8-1.3, no floor); stacking
//     another loop on it would multiply attempts (4 x 4 = 16), so ApplyTo
//     turns the built-in one off. Each attempt is rewound and re-signed.
//   - Policy.Do retries a function: an application-level operation such as
//     an optimistic-concurrency read-modify-write (with RetryOn412).
//
// The two are never stacked on the same failure. The pipeline retries
// transient failures (see What is retried); a loop around a client's requests
// retries its conflicts only: RetryOn412 retries 412 and 409, and each of
// tablekit's loops (table.Table.Modify and the patterns' read-modify-writes)
// retries its conflicts and what its own protocol defines (an entity that
// changed while it was read), never a transport failure, a throttling
// answer or a 5xx. So a request against an unreachable endpoint is tried
// 1 + MaxRetries times in all, and its error (*Error) says so; a loop's
// *Error counts the loop's passes, each of which met a conflict but the
// last.
//
// # What is retried
//
// The pipeline, and Do when its Policy has no Retryable of its own, retry
// transient failures: 408, 429 (Cosmos DB Table API throttling) and 5xx except 501 and 505 are transient, as are
// connection resets, refusals, broken pipes, unexpected EOFs and timeouts.
// Every other 4xx is final, and so is a cancelled context or an expired
// deadline. A Retry-After, retry-after-ms or x-ms-retry-after-ms header is a
// lower bound for the next wait, capped by MaxRetryAfter; a 429 without one
// waits at least 1 s (under the same cap), since Cosmos DB may send none. No wait is started that would end after the
// context's deadline: the caller gets the last real failure at once.
//
// # Policies
//
// Guide holds the article's sample numbers (30 s, 3 s, 90 s), for background
// work. Default (200 ms, 100 ms, 5 s, 5 retries: about 10.6 s in all) is for
// requests a user waits on. The zero Policy never retries.
//
// # Guide jitter or full jitter
//
// The guide's ±20% jitter keeps clients that failed together close together.
// For many clients contending for one hot entity (optimistic concurrency),
// full jitter (Policy.FullJitter: a uniform draw between the floor and the
// exponential bound) spreads them out. BenchmarkContention simulates N
// clients each updating one entity with If-Match (5 ms round trips, Default's
// numbers, 20 seeds); go test -run '^$' -bench Contention ./retry gives:
//
//	clients  policy  attempts/client  time until all committed
//	     10  guide        2.21              1.23 s
//	     10  full         2.05              0.64 s
//	     50  guide        3.01              4.73 s
//	     50  full         2.62              2.03 s
//	    200  guide        4.04             16.5 s
//	    200  full         3.48              6.07 s
//
// Full jitter drains contention 1.9-2.7x faster with ~13% fewer calls. The
// guide's formula stays the default, as the article prescribes; choose full
// jitter for hot-entity optimistic-concurrency loops.
//
// # Cost
//
// A Policy adds no round trips of its own: a request costs 1 + (number of
// retries) attempts, at most 1 + MaxRetries; a read-modify-write loop
// repeats its requests once per conflict, at most 1 + MaxRetries times.
//
// # Observability
//
// Policy.OnRetry sees every retry: attempt, delay, HTTP status, service error
// code and error (with URLs, which may hold SAS tokens, removed from
// transport errors). Request bodies and keys are never passed to it.
//
// tablekit's packages count, per operation, the attempts the pipeline
// policy sent, its resends (and Policy.Do's), and the throttling answers
// (429, 503, 500) it met, an operation made of several requests counting
// them all, and report these counts as the tablekit.round_trips and
// tablekit.retries span attributes and the tablekit.retries and
// tablekit.throttled metrics. Counting costs nothing for an operation that
// is not observed; clients built without ApplyTo count nothing.
package retry
