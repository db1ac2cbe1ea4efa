package eventual

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/retrycore"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
)

// ErrInvalid is the sentinel for a request rejected before anything is
// sent: a bad kind name or configuration, a payload json cannot encode or
// too large with no blob container configured, a Commit whose operations do
// not fit one transaction (an invalid operation's error, such as a key
// error matching [table.ErrInvalidKey], is wrapped in it). It also matches
// [table.ErrInvalid].
var ErrInvalid = invalid.New("eventual: invalid request")

// ErrCommitWindow is Commit's error when its primary batch was not sent
// (or was refused) because the intent's reservation had ended: the commit
// window passed before the batch could be sent, or a worker had already
// ruled the intent out. Nothing was applied; commit again with new Drafts
// (Kind.New): a ruled-out intent id never commits.
var ErrCommitWindow = errors.New("eventual: the commit window ended before the primary write")

// defaultCommitWindow is how long Commit's reserved message stays
// invisible while the primary batch is written.
const defaultCommitWindow = 30 * time.Second

// recordPrefix starts the RowKey of a commit record (then the intent id).
const recordPrefix = reserved.Prefix + "intent~"

// Commit record states.
const (
	stateCommitted = "committed" // written by Commit's batch
	stateAborted   = "aborted"   // written by a worker: the intent never commits
	statePoisoned  = "poisoned"  // the intent's message went to the poison queue
)

// Options configures a Queue. A nil *Options means defaults: no claim
// checks, no tables for Commit (Enqueue only), defaultCommitWindow.
type Options struct {
	// Blobs is the container for payloads too large for a message (claim
	// checks, up to MaxPayloadSize): such a payload is uploaded as a blob
	// named intents/<id>/<32 hex digits unique to the upload> (with
	// "commit-" before the digits for Commit's intents), the message
	// carries the name, and the worker empties the blob when the intent is
	// done; Sweep deletes emptied claim checks. Default (nil): such
	// payloads are rejected (ErrInvalid).
	Blobs *container.Client
	// Tables are the tables Commit writes primaries to: the commit records
	// live there, beside the primaries. Commit refuses other clients; a
	// worker needs every table its queue's intents were committed to.
	// Default (none): Commit refuses every table, Enqueue works.
	Tables []*aztables.Client
	// Profile is the table service of Tables, whose limits Commit and
	// Apply check before anything is sent. Default (nil): each client's
	// own, from its endpoint (table.ProfileFor); set it for a Cosmos DB
	// account behind a proxy or a custom domain, as table.Options.Profile
	// does for a Table.
	Profile *table.Profile
	// CommitWindow is how long Commit's reserved message stays invisible
	// while the primary batch is written; Commit does not send the batch
	// after three quarters of it. An intent whose release is lost (a crash
	// right after the batch) runs when the window ends. Default:
	// defaultCommitWindow; at least 1 s, whole seconds.
	CommitWindow time.Duration
	// Telemetry receives the spans, metrics and log records of the
	// Queue's operations, and of its Workers unless WorkerOptions says
	// otherwise. Default (nil): the global OpenTelemetry providers and
	// slog.Default().
	Telemetry *table.Telemetry
}

// Queue is the durable intents of one Azure queue: the way to start an
// eventually consistent flow (Enqueue, Commit), and what a Worker runs. It
// is safe for concurrent use.
type Queue struct {
	q       *azqueue.QueueClient
	poison  *azqueue.QueueClient
	blobs   *container.Client
	records map[*aztables.Client]*table.Table[record] // Options.Tables
	byName  map[string]*table.Table[record]           // the same, by name
	window  time.Duration
	// sweepMargin is how much longer than the window an aborted record is
	// kept at least: a minute (tests shorten it).
	sweepMargin time.Duration
	obs         *obs.Obs

	hook func(step string) error // tests: a crash at a step boundary
	// join is the core's check of a transaction, batchplan.Join (nil), or
	// a test's wrapper of it.
	join func(*table.Profile, ...table.Change) (table.Change, error)
}

// New returns a Queue over q, whose worker moves the intents it gives up
// on to poison (another queue: a worker cannot run without one, and a
// queue client cannot make a client of another queue, so it is not an
// option). Both are required; opts may be nil (defaults). It sends
// nothing.
func New(q, poison *azqueue.QueueClient, opts *Options) (*Queue, error) {
	if q == nil || poison == nil {
		return nil, fmt.Errorf("%w: a queue and a poison queue are required", ErrInvalid)
	}
	if poison.URL() == q.URL() {
		return nil, fmt.Errorf("%w: the poison queue must not be the queue itself", ErrInvalid)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	w := o.CommitWindow
	switch {
	case w == 0:
		w = defaultCommitWindow
	case w < time.Second || w%time.Second != 0 || w > 7*24*time.Hour:
		return nil, fmt.Errorf("%w: CommitWindow %v must be whole seconds from 1 s to 7 days", ErrInvalid, w)
	}
	qu := &Queue{q: q, poison: poison, blobs: o.Blobs, records: map[*aztables.Client]*table.Table[record]{}, byName: map[string]*table.Table[record]{}, window: w, sweepMargin: time.Minute, obs: obs.New((*obs.Config)(o.Telemetry))}
	for _, c := range o.Tables {
		if c == nil {
			return nil, fmt.Errorf("%w: a nil table client in Options.Tables", ErrInvalid)
		}
		rt, err := table.New(c, &table.Options[record]{Profile: o.Profile})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		rt = reserved.Table(rt) // commit records are reserved rows
		if rt.Name() == "" {
			return nil, fmt.Errorf("%w: Options.Tables[%d] is a client whose table name tablekit does not know (built with aztables directly): build it with table.NewClient(svc, name) or table.NewClientFromSASURL, or name it with table.Describe", ErrInvalid, len(qu.records))
		}
		if _, dup := qu.byName[rt.Name()]; dup {
			return nil, fmt.Errorf("%w: table %q given twice in Options.Tables", ErrInvalid, rt.Name())
		}
		qu.records[c], qu.byName[rt.Name()] = rt, rt
	}
	return qu, nil
}

// record is a commit record: a reserved row in the primary's partition
// that says the intent was committed (written in the primary's batch), or
// that a worker ruled it out (aborted), or that it was poisoned.
type record struct {
	table.Meta
	PartitionKey string `table:",pk"`
	RowKey       string `table:",rk"`
	Kind         string
	Created      time.Time
	State        string
	// Message is the id of the reserved message of the Commit that wrote
	// the record: it tells that Commit's own batch from an earlier one of
	// the same Draft.
	Message string `table:",omitempty"`
	Error   string `table:",omitempty"`
}

func recordKey(id string) string { return recordPrefix + id }

// recordOp is the insert of d's commit record in Commit's batch: it fails
// the batch when a worker has ruled d out (an aborted record is there).
func recordOp(rt *table.Table[record], pk string, d Draft, message string) table.Op {
	return rt.InsertOp(record{PartitionKey: pk, RowKey: recordKey(d.env.ID), Kind: d.env.Kind, Created: d.env.Created, State: stateCommitted, Message: message})
}

// step runs the test hook at a step boundary; an error is a crash there.
func (q *Queue) step(name string) error {
	if q.hook != nil {
		if err := q.hook(name); err != nil {
			return fmt.Errorf("%w before %s: %w", errCrashed, name, err)
		}
	}
	return nil
}

// Enqueued reports an intent put on the queue (a message, not a table
// row, so not a [table.Result]).
type Enqueued struct {
	ID        string // the intent's id
	MessageID string // the queue message's id
	// Blob is the claim check's blob name when the payload went to a blob.
	Blob string
}

// Enqueue puts the intent d on the queue, visible at once: 1 round trip
// (2 when the payload goes to a blob). Use it for flows that start with no
// primary write. On table.ErrOutcomeUnknown (the response was lost) the intent
// may be on the queue; enqueueing the same Draft again is harmless, since
// handlers are idempotent and the worker runs each message, but it may run
// twice.
func (q *Queue) Enqueue(ctx context.Context, d Draft) (_ Enqueued, err error) {
	ctx, sp := q.obs.Start(ctx, opEnqueue, "", "")
	defer func() { sp.EndWrite(err, false) }()
	d.env.TP, d.env.TS = obs.Inject(ctx)
	text, blobName, err := q.prepare(ctx, &d)
	if err != nil {
		return Enqueued{}, err
	}
	resp, err := q.q.EnqueueMessage(ctx, text, &azqueue.EnqueueMessageOptions{TimeToLive: ptr(int32(-1))})
	if err != nil {
		return Enqueued{}, fmt.Errorf("eventual: enqueueing intent %s (%s): %w", d.env.ID, d.env.Kind, redact.Error(err))
	}
	return Enqueued{ID: d.env.ID, MessageID: messageID(resp), Blob: blobName}, nil
}

// prepare checks d and returns its message text, uploading the payload as
// a claim-check blob when it does not fit.
func (q *Queue) prepare(ctx context.Context, d *Draft) (text, blobName string, err error) {
	if d.err != nil {
		return "", "", d.err
	}
	if d.env.ID == "" {
		return "", "", fmt.Errorf("%w: a zero Draft (make drafts with Kind.New)", ErrInvalid)
	}
	if text, err = d.env.text(); err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(text) <= maxEnvelope/3*4 {
		return text, "", nil
	}
	if n := len(d.env.Payload); n > MaxPayloadSize {
		return "", "", fmt.Errorf("%w: %w: the payload of intent %s (%s) is %d bytes of JSON, more than MaxPayloadSize (%d)", ErrInvalid, table.ErrTooLarge, d.env.ID, d.env.Kind, n, MaxPayloadSize)
	}
	if q.blobs == nil {
		return "", "", fmt.Errorf("%w: intent %s (%s) is %d bytes as a message, more than the queue's %d, and Options.Blobs is not set for claim checks", ErrInvalid, d.env.ID, d.env.Kind, len(text), maxEnvelope/3*4)
	}
	suffix, err := newID()
	if err != nil {
		return "", "", err
	}
	blobName = claimCheckName(d.env.ID, suffix, d.env.Commit != nil) // unique per upload
	if err := q.step("upload"); err != nil {
		return "", "", err
	}
	_, err = q.blobs.NewBlockBlobClient(blobName).UploadBuffer(ctx, d.env.Payload, nil)
	if err != nil {
		return "", "", fmt.Errorf("eventual: uploading the payload of intent %s (%s) to blob %s: %w", d.env.ID, d.env.Kind, blobName, redact.Error(err))
	}
	env := d.env
	env.Payload, env.Blob = nil, blobName
	text, err = env.text()
	return text, blobName, err
}

// CommitResult reports a Commit. It is not a [table.Result]: a Commit
// writes a batch of rows (reported per operation in Batch, the core's
// [table.BatchResult]) and enqueues messages, not one row.
type CommitResult struct {
	// Batch is the primary batch's result: its ops (yours, then one commit
	// record per intent) with their ETags.
	Batch table.BatchResult
	// Intents are the committed intents, in the order given.
	Intents []Enqueued
	// Released reports that every intent's message was made visible at
	// once. When false (the release failed), each runs when the commit
	// window ends instead.
	Released bool
}

// Commit writes ops (a primary write: operations on one partition of one
// of Options.Tables, made with that table's InsertOp, UpdateOp, ...) and
// starts the intents with it, all or nothing, without a window in which a
// crash loses an intent and without a table scan to find one:
//
//  1. reserve: each intent is enqueued invisible for the commit window;
//  2. commit: ops and one commit record per intent (a reserved row in the
//     primary's partition) are written in one entity group transaction;
//  3. release: each message is made visible at once.
//
// 3 round trips for one intent (2n+1 for n). When a reserve fails, Commit
// deletes the messages reserved before it and sends nothing more: the
// error matches [table.ErrNotApplied], also after a lost response (never
// table.ErrOutcomeUnknown: the batch was not sent), and a message such a reserve
// may have left is never released: when its window ends, a worker writes
// an aborted record for it and drops it. When the batch fails, Commit
// reads the first intent's commit record (1 round trip): a batch that
// applied after all (a client without tablekit's retry policy resent it
// and took the 409 at face value) is reported applied; otherwise Commit
// deletes the reserved messages (n round trips) and returns the batch's
// error; nothing of the flow remains. When its outcome is unknown
// (table.ErrOutcomeUnknown) the messages stay: when their window ends, a worker
// runs each intent if its commit record exists, and otherwise writes an
// aborted record in its place, so that the batch, if it ever arrives,
// fails: the flow happens exactly when the primary write did. The same
// covers a crash at any point (see the package documentation).
//
// ops must fit one transaction with the records, as the table's
// [table.Profile] has it: at most 100 operations and 4 MiB in all (2 MB on
// Cosmos DB), one PartitionKey; else ErrInvalid and nothing is sent.
func (q *Queue) Commit(ctx context.Context, c *aztables.Client, ops []table.Op, intents ...Draft) (res CommitResult, err error) {
	ctx, sp := q.obs.Start(ctx, opCommit, commitTable(q, c), commitPartition(ops))
	defer func() { sp.EndWrite(err, res.Batch.Verified) }()
	if c == nil || len(intents) == 0 {
		return res, fmt.Errorf("%w: Commit needs a table and at least one intent", ErrInvalid)
	}
	if len(ops) == 0 {
		return res, fmt.Errorf("%w: Commit needs the primary write's operations (use Enqueue for an intent alone)", ErrInvalid)
	}
	rt, err := q.recordsOf(c)
	if err != nil {
		return res, err
	}
	primary := table.Change{By: "the primary write", Ops: ops, Intents: make([]table.Intent, len(intents))}
	for i, d := range intents {
		primary.Intents[i] = d
	}
	tx, err := q.check(rt, []table.Change{primary}, slices.Clone(intents)) // the caller's Drafts stay as they are
	if err != nil {
		return res, err
	}
	return q.commit(ctx, tx)
}

// transaction is a Commit's or an Apply's write as check found it valid:
// the primary's ops, to be sent in one transaction with a commit record
// per draft.
type transaction struct {
	rt       *table.Table[record] // the primary's table's commit records
	pk       string               // the primary's partition
	ops      []table.Op           // the primary's, without the records
	drafts   []Draft
	notAfter time.Time // the changes' earliest NotAfter (Apply)
	by       string    // the changes' names
	// explained returns a failed transaction's error as the change of
	// the failing op explains it (Apply).
	explained func(error) error
}

// placeholderMessage stands for a message id, of the same length, in the
// commit records check sizes before the messages exist.
const placeholderMessage = "00000000-0000-0000-0000-000000000000"

// check validates changes with a commit record per draft as one entity
// group transaction on rt's table, before anything is sent: the one check
// of Commit and Apply, the core's (batchplan.Join: every op and intent
// valid, one partition, each entity once, the operations and bytes of one
// transaction of the table's profile, the records counted and named
// "eventual (commit records)").
func (q *Queue) check(rt *table.Table[record], changes []table.Change, drafts []Draft) (transaction, error) {
	pk := firstPartition(changes)
	all := changes
	if slices.ContainsFunc(changes, func(c table.Change) bool { return len(c.Ops) > 0 }) {
		records := table.Change{By: "eventual (commit records)"}
		for _, d := range drafts {
			records.Ops = append(records.Ops, recordOp(rt, pk, d, placeholderMessage))
		}
		all = append(slices.Clip(changes), records)
	} // else Join refuses the changes: records alone are no write
	join := batchplan.Join[table.Change, table.Profile]
	if q.join != nil {
		join = q.join
	}
	j, err := join(rt.Profile(), all...)
	if err != nil {
		return transaction{}, fmt.Errorf("eventual: %w", invalid.Mark(ErrInvalid, err))
	}
	explained := func(err error) error { return batchplan.Explained(j, err) }
	return transaction{rt: rt, pk: pk, ops: j.Ops[:len(j.Ops)-len(drafts)], drafts: drafts, notAfter: j.NotAfter, by: j.By, explained: explained}, nil
}

// commit sends tx, which check found valid: reserve, transaction, release.
// It is Commit without its span (Apply's is its own); the transaction is
// sent no later than tx.notAfter too, when it is not zero.
func (q *Queue) commit(ctx context.Context, tx transaction) (res CommitResult, err error) {
	rt, pk, ops, intents, notAfter := tx.rt, tx.pk, tx.ops, tx.drafts, tx.notAfter
	// The batch: ops, then a commit record per intent naming its reserved
	// message.
	batchOf := func(messages []string) []table.Op {
		all := append(make([]table.Op, 0, len(ops)+len(intents)), ops...)
		for i, d := range intents {
			all = append(all, recordOp(rt, pk, d, messages[i]))
		}
		return all
	}
	res.Intents = make([]Enqueued, len(intents))
	texts := make([]string, len(intents))
	for i := range intents {
		d := &intents[i]
		d.env.Commit = &commitRef{Table: rt.Name(), PartitionKey: pk}
		d.env.TP, d.env.TS = obs.Inject(ctx)
		if texts[i], res.Intents[i].Blob, err = q.prepare(ctx, d); err != nil {
			q.cancel(ctx, res.Intents[:i], nil)
			return CommitResult{}, err
		}
	}

	// 1. Reserve.
	start := time.Now()
	receipts := make([]string, len(intents))
	messages := make([]string, len(intents))
	for i := range intents {
		if err := q.step("reserve"); err != nil {
			return CommitResult{}, err
		}
		resp, err := q.q.EnqueueMessage(ctx, texts[i], &azqueue.EnqueueMessageOptions{TimeToLive: ptr(int32(-1)), VisibilityTimeout: ptr(int32(q.window / time.Second))})
		if err != nil {
			q.cancel(ctx, res.Intents, receipts[:i])
			return CommitResult{}, reserveFailed(intents[i].env.ID, intents[i].env.Kind, err)
		}
		res.Intents[i].ID, res.Intents[i].MessageID = intents[i].env.ID, messageID(resp)
		receipts[i], messages[i] = popReceipt(resp), messageID(resp)
	}

	// 2. Commit, only while the reservation holds with a margin.
	if err := q.step("commit"); err != nil {
		return CommitResult{}, err
	}
	deadline := start.Add(q.window * 3 / 4)
	if time.Now().After(deadline) {
		q.cancel(ctx, res.Intents, receipts)
		return CommitResult{}, fmt.Errorf("%w: %v passed while reserving", ErrCommitWindow, time.Since(start).Round(time.Millisecond))
	}
	if !notAfter.IsZero() && notAfter.Before(deadline) {
		if !time.Now().Before(notAfter) {
			q.cancel(ctx, res.Intents, receipts)
			return CommitResult{}, fmt.Errorf("eventual: %w: the change's NotAfter (%s) passed while reserving; nothing committed", table.ErrNotApplied, notAfter.Format(time.RFC3339Nano))
		}
		deadline = notAfter
	}
	bctx, cancel := context.WithDeadline(ctx, deadline)
	res.Batch, err = rt.Submit(bctx, table.Atomic(batchOf(messages)...), nil) // c's, with the Queue's profile
	cancel()
	switch {
	case errors.Is(err, table.ErrOutcomeUnknown):
		return res, fmt.Errorf("eventual: the primary batch's outcome is unknown; a worker settles it when the commit window ends (the intents run if and only if it applied): %w", err)
	case err != nil:
		if err := q.settleFailure(ctx, rt, pk, intents[0], messages[0], &res, err); err != nil {
			var left *leftToWorker
			if !errors.As(err, &left) {
				q.cancel(ctx, res.Intents, receipts)
			}
			return res, err
		}
		// The batch applied after all (its response was lost, and a
		// client without tablekit's retry policy sent it again).
	}

	// 3. Release.
	res.Released = true
	for i := range intents {
		if err := q.step("release"); err != nil {
			return res, err
		}
		env := intents[i].env
		env.Released = true
		if res.Intents[i].Blob != "" {
			env.Payload, env.Blob = nil, res.Intents[i].Blob
		}
		text, err := env.text()
		if err == nil {
			_, err = q.q.UpdateMessage(ctx, res.Intents[i].MessageID, receipts[i], text, &azqueue.UpdateMessageOptions{VisibilityTimeout: ptr(int32(0))})
		}
		if err != nil {
			res.Released = false // it runs when the window ends
		}
	}
	return res, nil
}

// reserveFailed is Commit's error when reserving intent id of kind failed
// with err: the primary batch was never sent, so it matches
// table.ErrNotApplied, also when the enqueue's outcome is unknown (its
// response was lost), since what such an enqueue may have left is a
// reservation, never released: when the commit window ends, a worker finds
// no commit record, writes an aborted one and drops the message, without
// running the intent. It wraps the last attempt's error (errors.As still
// finds an *azcore.ResponseError), but not the pipeline's
// table.ErrOutcomeUnknown verdict.
func reserveFailed(id, kind string, err error) error {
	maybe := ""
	var unknown *retrycore.OutcomeError
	if errors.As(err, &unknown) {
		err = unknown.Err
		maybe = " (a response was lost, so the reserved message may be on the queue: never released, it is ruled out by a worker when the commit window ends)"
	}
	return fmt.Errorf("eventual: reserving intent %s (%s) failed, so the primary batch was never sent: %w%s: %w", id, kind, table.ErrNotApplied, maybe, redact.Error(err))
}

// leftToWorker is the error of a failed Commit whose reserved messages
// stay for the worker to settle; it reads as the error it holds.
type leftToWorker struct{ err error }

func (e *leftToWorker) Error() string { return e.err.Error() }
func (e *leftToWorker) Unwrap() error { return e.err }

// settleFailure decides what a failed primary batch means, from the first
// intent's commit record (1 read; the batch is atomic, so one record
// speaks for all): the record of this Commit's own reservation means the
// batch applied (a client without tablekit's retry policy resent it after
// a lost response and took the 409 at face value); it returns nil and
// marks res applied. Otherwise it returns the error to report: an aborted
// record is ErrCommitWindow, another reservation's record means the Draft
// was committed before, no record means the batch's own error stands.
func (q *Queue) settleFailure(ctx context.Context, rt *table.Table[record], pk string, d Draft, message string, res *CommitResult, batchErr error) error {
	rec, err := rt.Get(ctx, pk, recordKey(d.env.ID), nil)
	switch {
	case errors.Is(err, table.ErrNotFound):
		return fmt.Errorf("eventual: the primary batch failed, nothing committed: %w", batchErr)
	case err != nil:
		// Undecided: the worker settles it when the window ends.
		return &leftToWorker{fmt.Errorf("eventual: the primary batch failed and reading intent %s's commit record failed too (%v), so a worker settles it when the commit window ends (the intents run if and only if the batch applied): %w", d.env.ID, redact.Error(err), batchErr)}
	case rec.Value.State == stateAborted:
		return fmt.Errorf("%w: a worker ruled intent %s out after its window; commit again with new Drafts (Kind.New): %w", ErrCommitWindow, d.env.ID, batchErr)
	case rec.Value.Message != message:
		return fmt.Errorf("%w: intent %s was committed before (a Draft commits once; make a new one with Kind.New): %w", ErrInvalid, d.env.ID, batchErr)
	}
	for i := range res.Batch.Ops {
		res.Batch.Ops[i] = table.OpResult{Applied: true, Verified: true}
	}
	return nil
}

// cancel deletes the reserved messages (those with receipts) and the
// claim-check blobs of a Commit whose batch was not applied. A failure is
// harmless: the worker rules each message out when its window ends.
func (q *Queue) cancel(ctx context.Context, in []Enqueued, receipts []string) {
	ctx = context.WithoutCancel(ctx)
	for i := range in {
		if q.step("cancel") != nil {
			return
		}
		if i < len(receipts) {
			q.q.DeleteMessage(ctx, in[i].MessageID, receipts[i], nil) //nolint:errcheck // see above
		}
		if in[i].Blob != "" { // uploaded by this call (names are unique)
			q.deleteBlob(ctx, in[i].Blob) //nolint:errcheck // else the container's lifecycle rule removes it
		}
	}
}

func (q *Queue) deleteBlob(ctx context.Context, name string) error {
	_, err := q.blobs.NewBlobClient(name).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: ptr(blob.DeleteSnapshotsOptionTypeInclude)})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return fmt.Errorf("eventual: deleting claim-check blob %s: %w", name, redact.Error(err))
	}
	return nil
}

// retire empties the claim check name of an intent that is done (1 round
// trip): a message that still names it (a duplicate of a resent enqueue)
// then finds the intent done, and Sweep deletes it later. A blob already
// gone stays gone.
func (q *Queue) retire(ctx context.Context, name string) error {
	_, err := q.blobs.NewBlockBlobClient(name).UploadBuffer(ctx, nil, &blockblob.UploadBufferOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: ptr(azcore.ETagAny)}},
	})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ConditionNotMet) {
		return fmt.Errorf("eventual: emptying claim-check blob %s: %w", name, redact.Error(err))
	}
	return nil
}

func messageID(r azqueue.EnqueueMessagesResponse) string {
	if len(r.Messages) == 0 || r.Messages[0].MessageID == nil {
		return ""
	}
	return *r.Messages[0].MessageID
}

func popReceipt(r azqueue.EnqueueMessagesResponse) string {
	if len(r.Messages) == 0 || r.Messages[0].PopReceipt == nil {
		return ""
	}
	return *r.Messages[0].PopReceipt
}

// isNotFound reports a 404 from any of the services, also when it is the
// final answer of a write whose earlier attempt was lost (for a delete,
// gone either way).
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	return errors.Is(err, table.ErrNotFound) || errors.As(err, &re) && re.StatusCode == 404 ||
		queueerror.HasCode(err, queueerror.MessageNotFound)
}

func ptr[V any](v V) *V { return &v }

// The operations of this package, for telemetry.
var (
	opEnqueue  = obs.Write("eventual.Enqueue")
	opCommit   = obs.Write("eventual.Commit")
	opApply    = obs.Write("eventual.Apply")
	opSweep    = obs.Write("eventual.Sweep")
	opPending  = obs.Read("eventual.Pending")
	opPoisoned = obs.Read("eventual.Poisoned")
	opHandle   = obs.Read("eventual.Handle")
)

// commitTable is the name of c's table when it is one of q's, for
// Commit's span.
func commitTable(q *Queue, c *aztables.Client) string {
	if rt := q.records[c]; rt != nil {
		return rt.Name()
	}
	return ""
}

// commitPartition is the primary's PartitionKey, for Commit's span.
func commitPartition(ops []table.Op) string {
	if len(ops) == 0 {
		return ""
	}
	return batchplan.PartitionKey(ops[0])
}
