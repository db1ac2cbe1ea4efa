package eventual

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"path"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"go.opentelemetry.io/otel/metric"
)

// PendingIntent is a committed intent whose commit record is still there:
// its worker has not finished it yet, or it was poisoned.
type PendingIntent struct {
	ID           string
	Kind         string
	Table        string
	PartitionKey string
	Created      time.Time
	// Poisoned reports that the intent went to the poison queue; Error says
	// why.
	Poisoned bool
	Error    string
}

// PendingOptions narrows Pending. A nil *PendingOptions means every
// partition of every table.
type PendingOptions struct {
	// Table is the name of one of Options.Tables; default: all of them.
	Table string
	// PartitionKey is one partition; default: all partitions (a scan of
	// the tables' reserved rows, for an operator, never for a hot path).
	PartitionKey string
	// OlderThan keeps only the intents made longer ago than this.
	OlderThan time.Duration
}

// Pending lists the committed intents not done yet, per partition or table:
// normally the few in flight; after an incident, the poisoned ones (see
// Poisoned for their messages) and any whose message was lost. It reads
// the commit records (a range query per partition; a filtered scan per
// table without PartitionKey), not the queue.
func (q *Queue) Pending(ctx context.Context, opts *PendingOptions) iter.Seq2[PendingIntent, error] {
	var tbl, pk string
	if opts != nil {
		tbl, pk = opts.Table, opts.PartitionKey
	}
	return obs.Seq2(q.obs, ctx, opPending, tbl, pk, func(ctx context.Context) iter.Seq2[PendingIntent, error] {
		return q.pending(ctx, opts)
	})
}

func (q *Queue) pending(ctx context.Context, opts *PendingOptions) iter.Seq2[PendingIntent, error] {
	var o PendingOptions
	if opts != nil {
		o = *opts
	}
	return func(yield func(PendingIntent, error) bool) {
		tables, err := q.tablesNamed(o.Table)
		if err == nil && o.PartitionKey != "" {
			if kerr := keys.Validate(o.PartitionKey); kerr != nil {
				err = fmt.Errorf("%w: PendingOptions.PartitionKey: %w", ErrInvalid, kerr)
			}
		}
		if err != nil {
			yield(PendingIntent{}, err)
			return
		}
		cutoff := time.Now().Add(-o.OlderThan)
		for _, rt := range tables {
			for rec, err := range rt.Query(ctx, recordQuery(o.PartitionKey, table.Ne("State", stateAborted))) {
				if err != nil {
					yield(PendingIntent{}, fmt.Errorf("eventual: reading the commit records of table %s: %w", rt.Name(), err))
					return
				}
				if o.OlderThan > 0 && !rec.Created.Before(cutoff) {
					continue
				}
				p := PendingIntent{ID: rec.RowKey[len(recordPrefix):], Kind: rec.Kind, Table: rt.Name(), PartitionKey: rec.PartitionKey, Created: rec.Created, Poisoned: rec.State == statePoisoned, Error: rec.Error}
				if !yield(p, nil) {
					return
				}
			}
		}
	}
}

// Swept reports what Sweep deleted.
type Swept struct {
	// Records is the number of aborted commit records deleted.
	Records int
	// ClaimChecks is the number of emptied claim checks deleted.
	ClaimChecks int
}

// SweepOptions configures Sweep. A nil *SweepOptions means defaults.
type SweepOptions struct {
	// OlderThan is the age from which Sweep deletes aborted commit records
	// and emptied claim checks. It must be at least the commit window
	// plus a minute (ErrInvalid otherwise): an aborted record must outlive
	// any batch that could still arrive, and the service may apply a
	// request some time after its client gave up. Choose it longer than
	// messages wait in the queue: a duplicate message of a done intent
	// (an enqueue resent after a lost response) delivered after its
	// emptied claim check was swept is poisoned. Default: 24 hours, or the
	// commit window plus a minute when that is longer.
	OlderThan time.Duration
}

// Sweep deletes the aborted commit records older than SweepOptions'
// OlderThan in c's table (one of Options.Tables, as for Commit), or, when
// c is nil, in every table of Options.Tables. A worker writes one when it
// rules out an intent whose Commit did not apply (a crash between reserve
// and commit, an unknown batch outcome), so they are rare; they are
// invisible to queries.
//
// When c is nil and Options.Blobs is set, Sweep also deletes the claim
// checks the worker emptied when their intents were done or ruled out,
// last written more than OlderThan ago.
//
// It reports what it deleted, also when it fails part way. Cost: a
// filtered scan of the tables plus one batch per 100 records of a
// partition; with claim checks, a listing per 5,000 blobs under intents/
// plus one delete per emptied claim check. On Cosmos DB, whose filters on
// Timestamp match nothing, the scan reads every aborted record and keeps
// the old ones by their Timestamp (a [table.Profile] without
// TimestampFilters).
func (q *Queue) Sweep(ctx context.Context, c *aztables.Client, opts *SweepOptions) (out Swept, err error) {
	ctx, sp := q.obs.Start(ctx, opSweep, commitTable(q, c), "")
	defer func() { sp.EndWrite(err, false) }()
	least := q.window + q.sweepMargin
	olderThan := max(24*time.Hour, least)
	if opts != nil && opts.OlderThan != 0 {
		olderThan = opts.OlderThan
	}
	if olderThan < least {
		return out, fmt.Errorf("%w: SweepOptions.OlderThan %v is shorter than the commit window %v plus %v", ErrInvalid, olderThan, q.window, q.sweepMargin)
	}
	tables, err := q.tablesNamed("")
	if c != nil {
		rt, rerr := q.recordsOf(c)
		tables, err = []*table.Table[record]{rt}, rerr
	}
	if err != nil {
		return out, err
	}
	cutoff := time.Now().Add(-olderThan)
	for _, rt := range tables {
		var ops []table.Op
		f := table.Eq("State", stateAborted)
		if rt.Profile().TimestampFilters {
			f = table.And(f, table.Lt("Timestamp", cutoff))
		}
		for rec, err := range rt.Query(ctx, recordQuery("", f)) {
			if err != nil {
				return out, fmt.Errorf("eventual: sweeping table %s: %w", rt.Name(), err)
			}
			if !rec.Timestamp.Before(cutoff) {
				continue // Cosmos DB cannot filter on Timestamp: checked here
			}
			ops = append(ops, rt.DeleteOp(rec.PartitionKey, rec.RowKey, rec.ETag))
		}
		res, err := rt.Submit(ctx, ops, &table.BatchOptions{ContinueOnError: true})
		for _, r := range res.Ops {
			if r.Applied {
				out.Records++
			}
		}
		if err != nil {
			return out, fmt.Errorf("eventual: sweeping table %s: %w", rt.Name(), err)
		}
	}
	if c == nil && q.blobs != nil {
		n, err := q.sweepClaimChecks(ctx, olderThan)
		out.ClaimChecks = n
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sweepClaimChecks deletes the emptied claim checks last written more than
// olderThan ago, each on the condition that it is still the version listed.
func (q *Queue) sweepClaimChecks(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	n := 0
	pager := q.blobs.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: ptr(claimCheckPrefix)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return n, fmt.Errorf("eventual: listing claim checks: %w", redact.Error(err))
		}
		for _, b := range page.Segment.BlobItems {
			p := b.Properties
			if b.Name == nil || p == nil || p.ContentLength == nil || *p.ContentLength != 0 || p.LastModified == nil || p.ETag == nil ||
				!p.LastModified.Before(cutoff) || !isAnyClaimCheck(*b.Name) {
				continue
			}
			_, err := q.blobs.NewBlobClient(*b.Name).Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: p.ETag}}})
			switch {
			case err == nil:
				n++
			case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ConditionNotMet):
			default:
				return n, fmt.Errorf("eventual: deleting claim-check blob %s: %w", *b.Name, redact.Error(err))
			}
		}
	}
	return n, nil
}

func (q *Queue) tablesNamed(name string) ([]*table.Table[record], error) {
	if name != "" {
		rt := q.byName[name]
		if rt == nil {
			return nil, fmt.Errorf("%w: table %q is not in Options.Tables", ErrInvalid, name)
		}
		return []*table.Table[record]{rt}, nil
	}
	names := make([]string, 0, len(q.byName))
	for n := range q.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*table.Table[record], len(names))
	for i, n := range names {
		out[i] = q.byName[n]
	}
	return out, nil
}

// recordQuery selects the commit records of one partition (or all) that
// match f.
func recordQuery(pk string, f table.Filter) *table.Query {
	keys := table.RowKeyRange(recordPrefix, recordPrefix[:len(recordPrefix)-1]+string(recordPrefix[len(recordPrefix)-1]+1))
	if pk != "" {
		keys = table.And(table.PartitionKey(pk), keys)
	}
	return &table.Query{Filter: table.And(keys, f), IncludeReserved: true}
}

// PoisonedIntent is an intent in the poison queue.
type PoisonedIntent struct {
	ID           string // "" when the message was not a readable intent
	Kind         string
	Created      time.Time
	Error        string // why it was poisoned
	DequeueCount int64  // its deliveries
	At           time.Time
	// Message is the message text to enqueue again on the queue once the
	// cause is fixed (the intent's envelope), or an unreadable message's
	// text (cut to about 47 KiB).
	Message string
}

// Poisoned peeks at up to 32 intents at the front of the poison queue (1
// round trip), without taking them. Move one back after fixing its cause
// by enqueueing its Message on the queue.
func (q *Queue) Poisoned(ctx context.Context, max int) (_ []PoisonedIntent, err error) {
	ctx, sp := q.obs.Start(ctx, opPoisoned, "", "")
	defer func() { sp.End(err) }()
	if max < 1 || max > maxDequeue {
		return nil, fmt.Errorf("%w: Poisoned reads 1 to %d messages, not %d", ErrInvalid, maxDequeue, max)
	}
	resp, err := q.poison.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: ptr(int32(max))})
	if err != nil {
		return nil, fmt.Errorf("eventual: reading the poison queue: %w", redact.Error(err))
	}
	var out []PoisonedIntent
	for _, m := range resp.Messages {
		var p poisoned
		text := deref(m.MessageText)
		if len(text) > MaxMessageSize {
			out = append(out, PoisonedIntent{Error: fmt.Sprintf("not a poison record: %d bytes, more than a message's %d", len(text), MaxMessageSize)})
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(text)
		if err == nil {
			err = json.Unmarshal(raw, &p)
		}
		if err != nil {
			out = append(out, PoisonedIntent{Message: deref(m.MessageText), Error: "not a poison record: " + err.Error()})
			continue
		}
		pi := PoisonedIntent{Error: p.Error, DequeueCount: p.DequeueCount, At: p.At, Message: p.Raw}
		if env := p.Intent; env != nil {
			pi.ID, pi.Kind, pi.Created, pi.Error = env.ID, env.Kind, env.Created, env.LastError
			env.LastError, env.Abandoned = "", 0
			pi.Message, _ = env.text()
		}
		out = append(out, pi)
	}
	return out, nil
}

// ObservePending reports, at each collection of the Queue's meter
// provider (Options.Telemetry), the pending intents as Pending sees them
// (committed intents whose commit records remain, poisoned ones included)
// as the gauge tablekit.eventual.pending, the age of the oldest as
// tablekit.eventual.pending.age (seconds: how stale an index may be), and
// the queue's approximate message count (invisible messages included) as
// tablekit.eventual.queue.depth, each with the attribute tablekit.queue
// (the queue's name). It is not automatic, because it is not free: each
// collection scans the commit records of every table of Options.Tables
// (Pending's filtered query: a round trip per table and per 1,000
// records) and reads the queue's properties (1 round trip). Unregister
// the returned Registration to stop.
func (q *Queue) ObservePending() (metric.Registration, error) {
	return q.obs.ObservePending(func(ctx context.Context) (obs.Pending, error) {
		var p obs.Pending
		var oldest time.Time
		for in, err := range q.pending(ctx, nil) {
			if err != nil {
				return p, err
			}
			p.Count++
			if oldest.IsZero() || in.Created.Before(oldest) {
				oldest = in.Created
			}
		}
		if !oldest.IsZero() {
			p.Oldest = max(0, time.Since(oldest))
		}
		p.Counted = true
		props, err := q.q.GetProperties(ctx, nil)
		if err != nil {
			return p, fmt.Errorf("eventual: reading queue %s: %w", redact.URL(q.q.URL()), redact.Error(err))
		}
		if props.ApproximateMessagesCount != nil {
			p.Depth, p.HasDepth = int64(*props.ApproximateMessagesCount), true
		}
		return p, nil
	}, obs.KeyQueue.String(queueName(q.q)))
}

// queueName is the name of the queue c addresses: the last segment of its
// URL's path (never its query, which may hold a SAS).
func queueName(c *azqueue.QueueClient) string {
	u, err := url.Parse(c.URL())
	if err != nil {
		return ""
	}
	return path.Base(u.Path)
}
