package eventual

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// maxDequeue is the most messages one dequeue returns (the service's
// limit).
const maxDequeue = 32

// WorkerOptions configures a Worker. A nil *WorkerOptions means defaults.
type WorkerOptions struct {
	// Concurrency is the most handlers running at once. Each dequeue asks
	// for a batch of min(Concurrency, 32) messages, and up to one batch
	// waits (its leases renewed) beside the running handlers. Default: 8.
	Concurrency int
	// VisibilityTimeout is the lease on a message: how long it stays
	// invisible to other workers after a dequeue. The worker renews it
	// every third of it while the message waits or its handler runs, so a
	// handler may take longer; a crashed worker's messages reappear after
	// it. A renewal that cannot finish before the lease ends cancels the
	// handler's context (LeaseLost). Whole seconds, at least 1 s. Default:
	// 30 s.
	VisibilityTimeout time.Duration
	// MaxDeliveries is how many deliveries an intent gets before it goes
	// to the poison queue: a handler error on the last one, or a delivery
	// beyond it (the earlier ones ended in crashes or expired leases),
	// poisons it. Default: 5.
	MaxDeliveries int64
	// Backoff is the wait before a failed intent is delivered again: its
	// message is made visible after Backoff.Delay(deliveries), rounded up
	// to whole seconds. Default: the guide's formula with a 1 s unit (about
	// 1 s, 3 s, 7 s, ... with ±20% jitter) up to 5 minutes. The zero Policy
	// retries at once.
	Backoff *retry.Policy
	// Idle is how the worker waits when the queue is empty: Idle.Delay(n)
	// after the n-th empty dequeue in a row (and Drain between its checks).
	// Default: 100 ms doubling to at most 5 s.
	Idle *retry.Policy
	// Grace is how long Run lets running handlers finish after its context
	// is done, before cancelling their context. A handler that does not
	// finish leaves its message on the queue (made visible at once) for
	// another worker. Default: 30 s.
	Grace time.Duration
	// Telemetry receives the spans (eventual.Handle, one per delivery),
	// metrics and log records of the worker: one record per event (debug
	// level for processed and renewed, warn for failed, dropped and lease
	// lost, error for poisoned). Default (nil): the Queue's
	// Options.Telemetry.
	Telemetry *table.Telemetry
	// OnEvent, if set, is called for every event (for metrics). It must be
	// safe for concurrent use and return quickly.
	OnEvent func(Event)
}

// EventType says what happened to an intent.
type EventType string

// The events of a Worker.
const (
	// Processed: the handler succeeded and the intent was removed.
	Processed EventType = "processed"
	// Failed: the handler returned an error; the intent is tried again
	// after the backoff.
	Failed EventType = "failed"
	// Poisoned: the intent was moved to the poison queue.
	Poisoned EventType = "poisoned"
	// Renewed: the lease on a running intent's message was extended.
	Renewed EventType = "renewed"
	// Dropped: the message was removed without running the handler: its
	// Commit never applied (ruled out), it was already done, or its
	// commit record names another message (a duplicate reservation).
	Dropped EventType = "dropped"
	// LeaseLost: the worker could not renew or settle the message (another
	// worker holds it now); the handler's context is cancelled and the
	// message is left to its new holder.
	LeaseLost EventType = "lease lost"
)

// Event is one thing that happened to an intent in a Worker.
type Event struct {
	Type         EventType
	ID           string // the intent's id ("" for an unreadable message)
	Kind         string
	MessageID    string
	DequeueCount int64
	Elapsed      time.Duration // since the delivery began
	Err          error         // Failed, Poisoned, LeaseLost; why
}

// ErrNotRunning is Drain's error when the Worker's Run is not running:
// nothing would empty the queue.
var ErrNotRunning = errors.New("eventual: the Worker's Run is not running")

// Worker runs the intents of a Queue with their kinds' handlers. Several
// workers, in one process or many, may run on one queue (competing
// consumers). It is safe for concurrent use.
type Worker struct {
	q        *Queue
	handlers map[string]Handler
	conc     int
	vt       time.Duration
	maxDeliv int64
	backoff  retry.Policy
	idle     retry.Policy
	grace    time.Duration
	obs      *obs.Obs
	onEvent  func(Event)

	running  atomic.Bool
	inflight atomic.Int64
}

// NewWorker returns a Worker for q's intents with handlers, one per kind
// (at least one). Both are required; opts may be nil (defaults). It sends
// nothing.
func NewWorker(q *Queue, handlers []Handler, opts *WorkerOptions) (*Worker, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: NewWorker needs a Queue", ErrInvalid)
	}
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	w := &Worker{q: q, handlers: map[string]Handler{}, conc: o.Concurrency, vt: o.VisibilityTimeout, maxDeliv: o.MaxDeliveries,
		backoff: retry.Policy{Default: time.Second, Max: 5 * time.Minute}, idle: retry.Policy{Default: 100 * time.Millisecond, Max: 5 * time.Second},
		grace: o.Grace, obs: q.obs, onEvent: o.OnEvent}
	if o.Telemetry != nil {
		w.obs = obs.New((*obs.Config)(o.Telemetry))
	}
	if o.Backoff != nil {
		w.backoff = *o.Backoff
	}
	if o.Idle != nil {
		w.idle = *o.Idle
	}
	switch {
	case w.conc == 0:
		w.conc = 8
	case w.conc < 0:
		return nil, fmt.Errorf("%w: Concurrency %d", ErrInvalid, w.conc)
	}
	switch {
	case w.vt == 0:
		w.vt = 30 * time.Second
	case w.vt < time.Second || w.vt%time.Second != 0 || w.vt > 7*24*time.Hour:
		return nil, fmt.Errorf("%w: VisibilityTimeout %v must be whole seconds from 1 s to 7 days", ErrInvalid, w.vt)
	}
	switch {
	case w.maxDeliv == 0:
		w.maxDeliv = 5
	case w.maxDeliv < 0:
		return nil, fmt.Errorf("%w: MaxDeliveries %d", ErrInvalid, w.maxDeliv)
	}
	if w.grace == 0 {
		w.grace = 30 * time.Second
	}
	if len(handlers) == 0 {
		return nil, fmt.Errorf("%w: NewWorker needs at least one handler", ErrInvalid)
	}
	for _, h := range handlers {
		if h.run == nil {
			return nil, fmt.Errorf("%w: a zero Handler (make handlers with Kind.Handle)", ErrInvalid)
		}
		if err := validKind(h.kind); err != nil {
			return nil, err
		}
		if _, dup := w.handlers[h.kind]; dup {
			return nil, fmt.Errorf("%w: two handlers for kind %q", ErrInvalid, h.kind)
		}
		w.handlers[h.kind] = h
	}
	return w, nil
}

// Run dequeues intents and runs their handlers until ctx is done, then
// stops gracefully: it dequeues no more, lets running handlers finish
// within Grace, and returns nil once every handler has returned. A
// message is deleted only after its handler succeeded. Run returns an
// error, after the same graceful stop, when the queue cannot be read at
// all (it does not exist, access is denied); transient failures are
// retried with the Idle backoff. One Run at a time per Worker.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: the Worker is already running", ErrInvalid)
	}
	defer w.running.Store(false)
	hctx, stopHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHandlers()
	var wg sync.WaitGroup
	// Up to a batch of messages waits, leased, beside the running
	// handlers, so that the next batch is at hand when a handler finishes
	// and every dequeue asks for a whole batch.
	batch := min(w.conc, maxDequeue)
	slots := make(chan struct{}, w.conc+batch) // dequeued, not finished
	running := make(chan struct{}, w.conc)     // handling
	var runErr error
	empty := 0
	for ctx.Err() == nil {
		n := 0
		for n < batch && ctx.Err() == nil {
			select {
			case slots <- struct{}{}:
				n++
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			for range n {
				<-slots
			}
			break
		}
		asked := time.Now() // the leases end VisibilityTimeout after this, at the latest
		resp, err := w.q.q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(n)), VisibilityTimeout: ptr(int32(w.vt / time.Second))})
		got := 0
		if err == nil {
			got = len(resp.Messages)
		}
		for range n - got {
			<-slots
		}
		switch {
		case ctx.Err() != nil:
		case err != nil && fatal(err):
			runErr = fmt.Errorf("eventual: reading queue %s: %w", redact.URL(w.q.q.URL()), redact.Error(err))
		case err != nil || got == 0:
			if err != nil {
				w.obs.Log(ctx, slog.LevelWarn, "eventual: dequeue failed", slog.String(string(obs.KeyError), obs.Sanitize(err.Error())))
			}
			retrycore.Sleep(ctx, w.idle.Delay(empty))
			empty++
			continue
		}
		if runErr != nil {
			break
		}
		empty = 0
		for _, m := range resp.Messages {
			w.inflight.Add(1)
			wg.Add(1)
			go func() {
				defer func() { w.inflight.Add(-1); <-slots; wg.Done() }()
				w.handle(ctx, hctx, running, m, asked)
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(w.grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		stopHandlers()
		<-done
	}
	return runErr
}

// fatal reports a dequeue error that retrying will not cure.
func fatal(err error) bool {
	var re *azcore.ResponseError
	return queueerror.HasCode(err, queueerror.QueueNotFound) || errors.As(err, &re) && (re.StatusCode == 403 || re.StatusCode == 404)
}

// Drain waits until the queue is empty (no message queued, reserved,
// waiting for a retry or being handled) and this worker runs no handler:
// for tests, demos and shutdown scripts. It watches this Worker's Run,
// which makes the progress: when Run is not running it fails with
// ErrNotRunning instead of waiting for ctx to end: at once when Run stops
// while Drain waits, and after a second when Run never started (it may be
// starting in another goroutine as Drain is called). It checks the queue
// between Idle waits (a round trip each). Poisoned intents are not waited
// for.
func (w *Worker) Drain(ctx context.Context) error {
	began, ran := time.Now(), false
	for x := 0; ; x++ {
		running := w.running.Load()
		ran = ran || running
		if !running && (ran || time.Since(began) >= runStartGrace) {
			return fmt.Errorf("%w: Drain of queue %s waits for this Worker's Run, which is not running: start it first (go w.Run(ctx))", ErrNotRunning, redact.URL(w.q.q.URL()))
		}
		if running && w.inflight.Load() == 0 {
			props, err := w.q.q.GetProperties(ctx, nil)
			if err != nil {
				return fmt.Errorf("eventual: reading queue %s: %w", redact.URL(w.q.q.URL()), redact.Error(err))
			}
			if props.ApproximateMessagesCount != nil && *props.ApproximateMessagesCount == 0 && w.inflight.Load() == 0 {
				return nil
			}
		}
		wait := w.idle.Delay(x)
		if !running {
			wait = min(wait, runStartGrace/4)
		}
		if err := retrycore.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// runStartGrace is how long Drain lets a Run that is not running yet
// start before it reports ErrNotRunning.
const runStartGrace = time.Second

// delivery is one dequeued message being handled.
type delivery struct {
	id    string
	count int64
	env   envelope
	// inserted is when the message was put on the queue, as the service
	// records it (to the second); zero if it did not say.
	inserted time.Time
	payload  []byte
	start    time.Time
	// etag is the ETag of the commit record this message owns (Commit's
	// intents), read before the handler runs.
	etag azcore.ETag

	mu     sync.Mutex
	pop    string    // the latest pop receipt
	until  time.Time // when the lease ends, by this clock (conservative)
	text   string    // the message's current text
	lost   bool      // the lease is lost: never touch the message again
	cancel context.CancelFunc
	// span is the delivery's eventual.Handle span; event and failure are
	// what its end records.
	span    *obs.Span
	event   EventType
	failure error
	stop    chan struct{}
	done    chan struct{}
}

// handle runs one message to its end: processed, failed (to be retried),
// dropped or poisoned. A crash injected by a test hook returns at once,
// leaving everything as a dead process would.
func (w *Worker) handle(runCtx, ctx context.Context, running chan struct{}, m *azqueue.DequeuedMessage, dequeued time.Time) {
	d := &delivery{id: deref(m.MessageID), pop: deref(m.PopReceipt), text: deref(m.MessageText), start: time.Now(), until: dequeued.Add(w.vt)}
	if m.DequeueCount != nil {
		d.count = *m.DequeueCount
	}
	if m.InsertionTime != nil {
		d.inserted = *m.InsertionTime
	}
	if w.q.step("dequeued") != nil {
		return
	}
	env, err := parseEnvelope(d.text, d.count)
	if err != nil {
		w.poison(ctx, d, err)
		return
	}
	d.env = env
	ctx = w.startSpan(ctx, d)
	defer d.endSpan()
	hctx := w.lease(ctx, d)
	defer d.release()
	select {
	case running <- struct{}{}:
		defer func() { <-running }()
	case <-runCtx.Done(): // stopping: leave it to another worker
		w.abandon(d)
		return
	}
	if n := d.deliveries(); n > w.maxDeliv {
		cause := env.LastError
		if cause == "" {
			cause = "no delivery finished: each ended in a crash or an expired lease"
		}
		w.poison(ctx, d, fmt.Errorf("%d deliveries, more than MaxDeliveries (%d); last error: %s", n, w.maxDeliv, cause))
		return
	}
	if c := env.Commit; c != nil && w.q.byName[c.Table] == nil {
		w.poison(ctx, d, fmt.Errorf("the intent was committed to table %q, which is not in this Queue's Options.Tables", c.Table))
		return
	}
	if env.Commit != nil {
		why, err := w.settle(ctx, d)
		switch {
		case errors.Is(err, errCrashed):
			return
		case err != nil:
			w.failed(ctx, d, err)
			return
		case why != "":
			w.drop(ctx, d, why)
			return
		}
	}
	d.payload = env.Payload
	if env.Blob != "" {
		if d.payload, err = w.download(ctx, env.Blob); err != nil {
			w.failed(ctx, d, err)
			return
		}
		if len(d.payload) == 0 { // emptied: the intent is done
			if err := w.finish(ctx, d); err != nil {
				if !errors.Is(err, errCrashed) {
					w.emit(d, LeaseLost, err)
				}
				return
			}
			w.emit(d, Dropped, errors.New("it is done: its claim check was emptied when it completed"))
			return
		}
	}
	h, ok := w.handlers[env.Kind]
	if !ok {
		w.failed(ctx, d, fmt.Errorf("no handler for kind %q in this worker", env.Kind))
		return
	}
	if w.q.step("handler") != nil {
		return
	}
	if err := runHandler(hctx, h, d); err != nil {
		if ctx.Err() != nil { // Run's grace period ended
			w.abandon(d)
			return
		}
		w.failed(ctx, d, err)
		return
	}
	if w.q.step("handled") != nil {
		return
	}
	if err := w.finish(ctx, d); err != nil {
		if !errors.Is(err, errCrashed) {
			w.emit(d, LeaseLost, err)
		}
		return
	}
	w.emit(d, Processed, nil)
}

// runHandler runs h, turning a panic into an error.
func runHandler(ctx context.Context, h Handler, d *delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return h.run(ctx, d)
}

// Why a Commit's message is dropped without running its handler.
const (
	dropNotApplied = "its Commit did not apply"
	dropDone       = "it is done: its commit record was removed when it completed"
	dropForeign    = "its commit record names another message: a duplicate of a resent reservation, or a message this Queue did not write"
)

// settle decides from the intent's commit record (1 read) whether this
// delivery of a Commit's intent runs its handler: it returns "" when it
// does (and keeps the record's ETag for finish), or why the message is
// dropped. A dropped message's claim check is left as it is: the partition
// it names is not proof that the claim check's own Commit did not apply.
//
// A committed record names the message Commit reserved, so it is this
// message's only if it names d.id: a duplicate of a resent reservation,
// or a message another writer made, is dropped without touching the
// record or the claim check its rightful message needs. A poisoned record
// runs from any message (an operator re-enqueues a poisoned intent as a
// new message). A missing record means a released intent is done (finish
// removed it); for an unreleased one, the worker writes an aborted record
// in its place first, so that the primary's batch, if it is still on its
// way, fails instead of applying without its intent.
func (w *Worker) settle(ctx context.Context, d *delivery) (drop string, err error) {
	c := d.env.Commit
	rt := w.q.byName[c.Table]
	for range 2 {
		rec, err := rt.Get(ctx, c.PartitionKey, recordKey(d.env.ID), nil)
		switch {
		case err == nil && rec.Value.State == stateAborted:
			return dropNotApplied, nil
		case err == nil && rec.Value.State != statePoisoned && rec.Value.Message != d.id:
			return dropForeign, nil
		case err == nil:
			d.etag = rec.ETag
			return "", nil
		case !errors.Is(err, table.ErrNotFound):
			return "", err
		case d.env.Released:
			return dropDone, nil
		}
		if err := w.q.step("abort"); err != nil {
			return "", err
		}
		_, err = rt.Insert(ctx, record{PartitionKey: c.PartitionKey, RowKey: recordKey(d.env.ID), Kind: d.env.Kind, Created: d.env.Created, State: stateAborted})
		switch {
		case err == nil:
			return dropNotApplied, nil
		case !errors.Is(err, table.ErrAlreadyExists):
			return "", err
		}
		// The batch arrived in between: read its record.
	}
	return "", fmt.Errorf("the commit record of intent %s keeps changing", d.env.ID)
}

// download reads the claim check name (already checked to be one of this
// intent's), refusing one larger than MaxPayloadSize before reading it.
func (w *Worker) download(ctx context.Context, name string) ([]byte, error) {
	if w.q.blobs == nil {
		return nil, &permanentError{fmt.Errorf("the payload is in blob %s and this Queue has no Options.Blobs", name)}
	}
	tooLarge := func(n int64) error {
		return &permanentError{fmt.Errorf("%w: claim-check blob %s is %d bytes or more, larger than MaxPayloadSize (%d)", table.ErrTooLarge, name, n, MaxPayloadSize)}
	}
	resp, err := w.q.blobs.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		err = fmt.Errorf("eventual: reading claim-check blob %s: %w", name, redact.Error(err))
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			// Removed by someone else, or by Sweep long after the intent
			// completed (a duplicate message that waited longer).
			return nil, &permanentError{err}
		}
		return nil, err
	}
	defer resp.Body.Close()
	if n := resp.ContentLength; n != nil && *n > MaxPayloadSize {
		return nil, tooLarge(*n)
	}
	payload, err := io.ReadAll(io.LimitReader(resp.Body, MaxPayloadSize+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("eventual: reading claim-check blob %s: %w", name, redact.Error(err))
	case len(payload) > MaxPayloadSize:
		return nil, tooLarge(int64(len(payload)))
	}
	return payload, nil
}

// finish removes a done intent: it empties its claim check, removes its
// commit record (the one this message owns, by its ETag) and deletes its
// message, in that order, so that a crash in between leaves a message that
// finds the intent done (an empty claim check, or no record for a
// released message) or runs the idempotent handler again, never a record
// nobody removes.
func (w *Worker) finish(ctx context.Context, d *delivery) error {
	if d.env.Blob != "" && len(d.payload) > 0 { // not emptied yet
		if err := w.q.retire(ctx, d.env.Blob); err != nil {
			return err
		}
		if err := w.q.step("emptied"); err != nil {
			return err
		}
	}
	if c := d.env.Commit; c != nil {
		rt := w.q.byName[c.Table]
		if err := rt.Delete(ctx, c.PartitionKey, recordKey(d.env.ID), d.etag); err != nil && !isNotFound(err) {
			return fmt.Errorf("eventual: removing the commit record of intent %s: %w", d.env.ID, redact.Error(err))
		}
		if err := w.q.step("unrecorded"); err != nil {
			return err
		}
	}
	if err := w.q.step("delete"); err != nil {
		return err
	}
	return w.deleteMessage(ctx, d)
}

// abandon makes the message of a handler stopped by Run's shutdown visible
// at once, for another worker, without recording a failure.
func (w *Worker) abandon(d *delivery) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.env.Abandoned++   // this delivery does not count toward MaxDeliveries
	w.update(ctx, d, 0) //nolint:errcheck // else it reappears after VisibilityTimeout
}

// drop removes a message without running its handler.
func (w *Worker) drop(ctx context.Context, d *delivery, why string) {
	if err := w.deleteMessage(ctx, d); err != nil {
		w.emit(d, LeaseLost, err)
		return
	}
	w.emit(d, Dropped, errors.New(why))
}

// failed records a handler's (or a step's) error in the message and makes
// it visible again after the backoff, or poisons it after the last
// delivery or for an error retrying cannot cure.
func (w *Worker) failed(ctx context.Context, d *delivery, err error) {
	if d.isLost() {
		w.emit(d, LeaseLost, fmt.Errorf("the lease ended while the intent ran (its new holder retries it): %w", err))
		return
	}
	var perm *permanentError
	if errors.As(err, &perm) || d.deliveries() >= w.maxDeliv {
		w.poison(ctx, d, err)
		return
	}
	d.env.LastError = errorText(err)
	delay := w.backoff.Delay(int(d.deliveries()))
	secs := int32((delay + time.Second - 1) / time.Second)
	w.emit(d, Failed, err)
	if uerr := w.update(ctx, d, secs); uerr != nil && d.isLost() {
		w.emit(d, LeaseLost, uerr)
	}
}

// poison moves the message to the poison queue with cause, marks the
// intent's commit record poisoned (so that Pending shows it), and deletes
// the message. A crash in between leaves a message that is poisoned again
// at its next delivery (a duplicate in the poison queue, never a loss).
func (w *Worker) poison(ctx context.Context, d *delivery, cause error) {
	if d.isLost() {
		w.emit(d, LeaseLost, fmt.Errorf("not poisoned: the lease ended (its new holder decides): %w", cause))
		return
	}
	msg := errorText(cause)
	if c := d.env.Commit; c != nil {
		if rt := w.q.byName[c.Table]; rt != nil {
			// Only a committed record is marked: an aborted one stays
			// aborted, and an intent not settled yet has none.
			if rec, err := rt.Get(ctx, c.PartitionKey, recordKey(d.env.ID), nil); err == nil && rec.Value.State == stateCommitted && rec.Value.Message == d.id {
				rec.Value.State, rec.Value.Error = statePoisoned, msg
				rt.Update(ctx, rec.Value, rec.ETag, table.Fields("State", "Error")) //nolint:errcheck // best effort: the poison queue has it
			}
		}
	}
	p := poisoned{DequeueCount: d.count, At: time.Now().UTC()}
	if d.env.ID != "" {
		env := d.env
		env.LastError = msg
		p.Intent = &env
	} else { // unreadable: keep what fits
		p.Raw, p.Error = cutJSON(d.text, maxEnvelope), msg
	}
	raw, err := json.Marshal(p)
	if err == nil {
		_, err = w.q.poison.EnqueueMessage(ctx, base64.StdEncoding.EncodeToString(raw), &azqueue.EnqueueMessageOptions{TimeToLive: ptr(int32(-1))})
	}
	if err != nil {
		// Not poisoned: the message comes back and is poisoned then.
		w.emit(d, Failed, fmt.Errorf("moving to the poison queue: %w (cause: %s)", redact.Error(err), msg))
		return
	}
	if w.q.step("poisoned") != nil {
		return
	}
	if err := w.deleteMessage(ctx, d); err != nil {
		w.emit(d, LeaseLost, err)
		return
	}
	w.emit(d, Poisoned, errors.New(msg))
}

// deliveries counts d's deliveries toward MaxDeliveries: its dequeues less
// those a worker's shutdown gave back.
func (d *delivery) deliveries() int64 { return d.count - d.env.Abandoned }

// lease starts renewing d's message and returns the handler's context,
// cancelled when the lease is lost.
func (w *Worker) lease(ctx context.Context, d *delivery) context.Context {
	hctx, cancel := context.WithCancel(ctx)
	d.cancel, d.stop, d.done = cancel, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(d.done)
		t := time.NewTicker(w.vt / 3)
		defer t.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			d.mu.Lock()
			if d.lost {
				d.mu.Unlock()
				return
			}
			// A renewal that cannot finish before the lease ends is too
			// late: another worker may hold the message by then.
			rctx, rcancel := context.WithDeadline(ctx, d.until)
			err := w.updateLocked(rctx, d, int32(w.vt/time.Second))
			rcancel()
			if err != nil && !time.Now().Before(d.until) {
				d.lost = true
			}
			lost := d.lost
			d.mu.Unlock()
			if lost {
				cancel() // the handler should stop: the intent runs again elsewhere
				w.emit(d, LeaseLost, err)
				return
			}
			if err == nil {
				w.emit(d, Renewed, nil)
			}
		}
	}()
	return hctx
}

// release stops the renewal and waits for it.
func (d *delivery) release() {
	if d.stop == nil {
		return
	}
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	<-d.done
	d.cancel()
}

func (d *delivery) isLost() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lost
}

// update rewrites the message with d.env and makes it visible after secs.
func (w *Worker) update(ctx context.Context, d *delivery, secs int32) error {
	text, err := d.env.text()
	if err != nil {
		return err
	}
	d.release()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost {
		return errors.New("the lease was lost")
	}
	d.text = text
	return w.updateLocked(ctx, d, secs)
}

// updateLocked sends d.text with visibility secs and keeps the new pop
// receipt and lease end; a receipt the service no longer knows means the
// lease is lost.
func (w *Worker) updateLocked(ctx context.Context, d *delivery, secs int32) error {
	sent := time.Now()
	resp, err := w.q.q.UpdateMessage(ctx, d.id, d.pop, d.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: ptr(secs)})
	if err != nil {
		if queueerror.HasCode(err, queueerror.PopReceiptMismatch, queueerror.MessageNotFound) || errors.Is(err, retry.ErrOutcomeUnknown) {
			d.lost = true // an unknown update may have changed the receipt
		}
		return fmt.Errorf("eventual: updating message %s: %w", d.id, redact.Error(err))
	}
	if resp.PopReceipt != nil {
		d.pop = *resp.PopReceipt
	}
	d.until = sent.Add(time.Duration(secs) * time.Second)
	return nil
}

// deleteMessage deletes d's message with the latest pop receipt; a message
// already gone (a retried delete) is success.
func (w *Worker) deleteMessage(ctx context.Context, d *delivery) error {
	d.release()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost {
		return errors.New("eventual: the lease was lost before the message could be deleted")
	}
	_, err := w.q.q.DeleteMessage(ctx, d.id, d.pop, nil)
	if err != nil && !queueerror.HasCode(err, queueerror.MessageNotFound) {
		return fmt.Errorf("eventual: deleting message %s: %w", d.id, redact.Error(err))
	}
	return nil
}

func (w *Worker) emit(d *delivery, t EventType, err error) {
	ev := Event{Type: t, ID: d.env.ID, Kind: d.env.Kind, MessageID: d.id, DequeueCount: d.count, Elapsed: time.Since(d.start), Err: redact.Error(err)}
	if w.onEvent != nil {
		w.onEvent(ev)
	}
	ctx := context.Background()
	switch t {
	case Renewed, LeaseLost:
		w.obs.Lease(ctx, t == Renewed)
	default:
		w.obs.Intent(ctx, string(t), w.kindLabel(d.env.Kind), d.count, d.lagFrom())
	}
	if t != Renewed {
		d.mu.Lock()
		d.event, d.failure = t, nil
		if t != Dropped {
			d.failure = ev.Err
		}
		d.mu.Unlock()
	}
	level := slog.LevelWarn
	switch t {
	case Processed, Renewed:
		level = slog.LevelDebug
	case Poisoned:
		level = slog.LevelError
	}
	if !w.obs.Logger().Enabled(ctx, level) {
		return // Processed and Renewed are debug records: built only when wanted
	}
	attrs := []slog.Attr{slog.String(string(obs.KeyIntentID), ev.ID), slog.String(string(obs.KeyIntentKind), ev.Kind),
		slog.String(string(obs.KeyMessageID), ev.MessageID), slog.Int64(string(obs.KeyDeliveries), ev.DequeueCount), slog.Duration("elapsed", ev.Elapsed)}
	if c := d.env.Commit; c != nil {
		attrs = append(attrs, slog.String(string(obs.KeyTable), c.Table), slog.String(string(obs.KeyPartition), c.PartitionKey))
	}
	if err != nil {
		attrs = append(attrs, slog.String(string(obs.KeyError), obs.Sanitize(err.Error())))
	}
	w.obs.Log(ctx, level, "eventual: "+string(t), attrs...)
}

// kindLabel is kind as the worker's metrics and spans record it: one of
// its handlers' kinds, or obs.OtherKind for any other (a message's kind is
// whatever its writer chose, and each value would be a metric series).
func (w *Worker) kindLabel(kind string) string {
	if _, ok := w.handlers[kind]; ok {
		return kind
	}
	return obs.OtherKind
}

// lagFrom is when d's intent's consistency lag starts: its message's
// insertion, as the service records it. The creation time the message
// claims (Kind.New's, which its writer sets as it likes) only places it
// within the second the service records; zero when the service did not
// say.
func (d *delivery) lagFrom() time.Time {
	if d.inserted.IsZero() {
		return time.Time{}
	}
	if c := d.env.Created; !c.Before(d.inserted) && c.Before(d.inserted.Add(time.Second)) {
		return c
	}
	return d.inserted
}

// startSpan starts d's eventual.Handle span, a child of the span that
// enqueued or committed the intent when its envelope carries one, and
// returns its context.
func (w *Worker) startSpan(ctx context.Context, d *delivery) context.Context {
	var tbl, pk string
	if c := d.env.Commit; c != nil {
		tbl, pk = c.Table, c.PartitionKey
	}
	ctx, sp := w.obs.Start(obs.Extract(ctx, d.env.TP, d.env.TS), opHandle, tbl, pk)
	sp.Set(obs.KeyIntentID.String(d.env.ID), obs.KeyIntentKind.String(w.kindLabel(d.env.Kind)), obs.KeyMessageID.String(d.id), obs.KeyDeliveries.Int64(d.count))
	d.span = &sp
	return ctx
}

// endSpan ends d's span with the last event emitted (a dropped message's
// reason is no failure), once the lease's renewals have stopped.
func (d *delivery) endSpan() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.event != "" {
		d.span.Set(obs.KeyIntentEvent.String(string(d.event)))
	}
	d.span.End(d.failure)
}

// permanentError is a failure that retrying cannot cure (an unreadable
// payload): the intent is poisoned at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// errCrashed stops a delivery at a test's crash point.
var errCrashed = errors.New("eventual: crashed (test hook)")

// poisoned is a poison-queue message: the intent's envelope, its last
// error in LastError (so it fits the queue whatever fitted before), or an
// unreadable message's text and why.
type poisoned struct {
	Intent       *envelope `json:"i,omitempty"`
	Raw          string    `json:"raw,omitempty"`
	Error        string    `json:"e,omitempty"`
	DequeueCount int64     `json:"n"`
	At           time.Time `json:"t"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
