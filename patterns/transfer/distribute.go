package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/patterns/eventual"
)

// rangeJob is the payload of one range's intent.
type rangeJob struct {
	Prefix string `json:"prefix"`
	Range  int    `json:"range"`
}

// exportKind is the intent of exporting one range of an export.
var exportKind = eventual.NewKind[rangeJob]("tablekit.transfer.export-range")

// Distribute starts an export that several processes share: it splits
// the table of src into opts.Ranges PartitionKey ranges (as Export does),
// writes the manifest under prefix in dst, and puts one intent per range
// on q. Processes that run an eventual.Worker of q with Handler(src, dst,
// prefix, opts) export the ranges; the one that finishes the last range
// marks the export complete. A process that dies mid-range stops renewing
// its message's lease, and the range is delivered to another process,
// which continues it from the range's cursor in the manifest. Each chunk
// is recorded in the manifest by a write conditioned on its ETag, for its
// range at the position the writer read it from, so a range is recorded
// once even when a process whose lease expired still runs. A prefix that
// holds an export is ErrExists. Safe for concurrent use.
//
// Round trips: the split's probes, 1 manifest read and 1 write, 1 enqueue
// per range; the workers' as Export's per page and chunk, plus the
// worker's own (a dequeue per up to 32 ranges, 1 lease renewal per third
// of the visibility timeout, 1 message delete per range), plus 1 read per
// manifest write another process got in first.
func Distribute(ctx context.Context, src *aztables.Client, dst *container.Client, prefix string, q *eventual.Queue, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if err := opts.check(); err != nil {
		return sum, err
	}
	if err := checkPrefix(prefix); err != nil {
		return sum, err
	}
	if q == nil {
		return sum, fmt.Errorf("%w: a queue is required", ErrInvalid)
	}
	o := opts.orDefault()
	t, err := source(src)
	if err != nil {
		return sum, err
	}
	if err := checkSince(t, o.Since); err != nil {
		return sum, err
	}
	m, _, err := readManifest(ctx, dst, prefix)
	switch {
	case err != nil:
		return sum, err
	case m != nil && !o.Resume:
		return sum, fmt.Errorf("%w: %s", ErrExists, manifestName(prefix))
	case m == nil:
		ranges, err := split(ctx, t, o.From, o.To, o.Since, o.Ranges, o.Concurrency)
		if err != nil {
			return sum, err
		}
		m = newManifest(t, &o, sum.Started, ranges)
		if _, err := writeManifest(ctx, dst, prefix, m, ""); errors.Is(err, errChanged) {
			return sum, fmt.Errorf("%w: %s (written meanwhile)", ErrExists, manifestName(prefix))
		} else if err != nil {
			return sum, err
		}
	}
	// With Resume, the ranges not done are enqueued again: for an export
	// whose intents were lost (poisoned, or the queue deleted). A range
	// that is still on the queue then runs twice, harmlessly: the second
	// finds it done, or continues where the first left it.
	for i, r := range m.Ranges {
		if r.Done {
			continue
		}
		if _, err := q.Enqueue(ctx, exportKind.New(rangeJob{Prefix: prefix, Range: i})); err != nil {
			return sum, wrap(err, "enqueueing range %d", i)
		}
	}
	sum.Ended = time.Now().UTC()
	return sum, nil
}

// Handler returns the handler of the intents Distribute enqueued for the
// export at prefix: give it to eventual.NewWorker in every process that
// shares the export. It takes the intents of that export only (a message
// naming another prefix, or a range the manifest does not have, fails,
// and is poisoned after the worker's MaxDeliveries). opts.Progress, if
// set, sees this process's chunks. Safe for concurrent use.
func Handler(src *aztables.Client, dst *container.Client, prefix string, opts *Options) eventual.Handler {
	o := opts.orDefault()
	progress := newTracker(o.Progress, 0)
	return exportKind.Handle(func(ctx context.Context, in eventual.Intent[rangeJob]) error {
		if err := opts.check(); err != nil {
			return err
		}
		if in.Payload.Prefix != prefix {
			return fmt.Errorf("%w: an intent for the export at %.80q, not %q", ErrInvalid, in.Payload.Prefix, prefix)
		}
		t, err := source(src)
		if err != nil {
			return err
		}
		m, etag, err := readManifest(ctx, dst, prefix)
		switch {
		case err != nil:
			return err
		case m == nil:
			return fmt.Errorf("%w: no export at %s", ErrInvalid, prefix)
		case m.Table != t.Name():
			return fmt.Errorf("%w: the export at %s is of table %.40q, not %s", ErrInvalid, prefix, m.Table, t.Name())
		case in.Payload.Range < 0 || in.Payload.Range >= len(m.Ranges):
			return fmt.Errorf("%w: the export at %s has no range %d", ErrInvalid, prefix, in.Payload.Range)
		}
		x, err := newExporter(t, dst, prefix, &o, m, etag, progress)
		if err != nil {
			return err
		}
		if !m.Ranges[in.Payload.Range].Done {
			// errLost (another process recorded a chunk of the range
			// since this one read the manifest) fails this delivery too:
			// the next one continues from what is recorded, or finds the
			// range done.
			if err := x.exportRange(ctx, in.Payload.Range); err != nil {
				return err
			}
		}
		return x.complete(ctx)
	})
}
