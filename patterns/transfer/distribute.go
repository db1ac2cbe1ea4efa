package transfer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// The intents of shared transfers: exporting or importing one range of an
// export, copying one range of a table.
var (
	exportKind = eventual.NewKind[rangeJob]("tablekit.transfer.export-range")
	importKind = eventual.NewKind[rangeJob]("tablekit.transfer.import-range")
	copyKind   = eventual.NewKind[copyJob]("tablekit.transfer.copy-range")
)

// copyJob is the payload of one range of a shared copy.
type copyJob struct {
	Source string `json:"source"`
	Target string `json:"target"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
}

// DistributeExport starts an export that several processes share: it splits
// the table of src into opts.Ranges PartitionKey ranges (as Export does),
// writes the manifest under prefix in dst, and puts one intent per range
// on q. Processes that run an eventual.Worker of q with ExportHandler(src, dst,
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
func DistributeExport(ctx context.Context, src *aztables.Client, dst *container.Client, prefix string, q *eventual.Queue, opts *Options) (Summary, error) {
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
	case m != nil && m.isOf(t, &o, prefix) != nil:
		return sum, m.isOf(t, &o, prefix)
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

// ExportHandler returns the handler of the intents DistributeExport enqueued for the
// export at prefix: give it to eventual.NewWorker in every process that
// shares the export. It takes the intents of that export only (a message
// naming another prefix, or a range the manifest does not have, fails,
// and is poisoned after the worker's MaxDeliveries). opts.Progress, if
// set, sees this process's chunks. Safe for concurrent use.
func ExportHandler(src *aztables.Client, dst *container.Client, prefix string, opts *Options) eventual.Handler {
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

// DistributeImport starts an import of the export under prefix in src
// into the table of dst that several processes share: it checks the
// export as Import does, resets the import's checkpoint (or, with
// opts.Resume, reads it), and puts on q one intent per range of the
// export with chunks the checkpoint does not list. Processes that run an
// eventual.Worker of q with ImportHandler(src, prefix, dst, opts) import
// the ranges, each chunk recorded in the checkpoint (with its rejects)
// once written; a process that dies mid-range stops renewing its lease,
// and the range is delivered again, to any process, which continues it
// after the chunks recorded. When the queue is drained, Import with
// Resume writes whatever is left (nothing, unless intents were poisoned)
// and reports the rejects of the whole import. Safe for concurrent use.
//
// Round trips: 1 for the manifest, 1 for the checkpoint, 1 enqueue per
// range; the workers' as Import's per chunk, plus the worker's own (see
// DistributeExport), plus 2 (the manifest and the checkpoint) per
// delivery.
func DistributeImport(ctx context.Context, src *container.Client, prefix string, dst *aztables.Client, q *eventual.Queue, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if q == nil {
		return sum, fmt.Errorf("%w: a queue is required", ErrInvalid)
	}
	o := opts.orDefault()
	im, err := newImporter(ctx, src, prefix, dst, opts, &o)
	if err != nil {
		return sum, err
	}
	for i, r := range im.m.Ranges {
		left := false
		for _, c := range r.Chunks {
			left = left || !slices.Contains(im.cp.Done, c.Name)
		}
		if !left {
			continue
		}
		if _, err := q.Enqueue(ctx, importKind.New(rangeJob{Prefix: prefix, Range: i})); err != nil {
			return sum, wrap(err, "enqueueing range %d", i)
		}
	}
	sum.Ended = time.Now().UTC()
	return sum, nil
}

// ImportHandler returns the handler of the intents DistributeImport
// enqueued for the import of the export at prefix into the table of dst:
// give it to eventual.NewWorker in every process that shares the import.
// It takes that import's intents only (another prefix's, or a range the
// manifest does not have, fail and are poisoned after the worker's
// MaxDeliveries). A delivery imports the range's chunks that the
// checkpoint does not list; the entities the target rejects are recorded
// in the checkpoint, not failed (Import with Resume reports them).
// opts.Progress, if set, sees this process's chunks. Safe for concurrent
// use.
func ImportHandler(src *container.Client, prefix string, dst *aztables.Client, opts *Options) eventual.Handler {
	o := opts.orDefault()
	o.Resume = true
	progress := newTracker(o.Progress, 0)
	return importKind.Handle(func(ctx context.Context, in eventual.Intent[rangeJob]) error {
		if in.Payload.Prefix != prefix {
			return fmt.Errorf("%w: an intent for the export at %.80q, not %q", ErrInvalid, in.Payload.Prefix, prefix)
		}
		im, err := newImporter(ctx, src, prefix, dst, opts, &o)
		if err != nil {
			return err
		}
		if in.Payload.Range < 0 || in.Payload.Range >= len(im.m.Ranges) {
			return fmt.Errorf("%w: the export at %s has no range %d", ErrInvalid, prefix, in.Payload.Range)
		}
		var sum Summary
		return im.importRange(ctx, in.Payload.Range, &sum, progress)
	})
}

// DistributeCopy starts a copy of the table of src into the table of dst
// that several processes share: it splits the source into opts.Ranges
// PartitionKey ranges (as Copy does) and puts one intent per range on q.
// Processes that run an eventual.Worker of q with CopyHandler(src, dst,
// opts) copy the ranges; a process that dies mid-range stops renewing its
// lease, and the range is delivered again, to any process, which copies it
// again (upserts: the same table). The copy is done when the queue is
// drained. Safe for concurrent use.
//
// Round trips: the split's probes, 1 enqueue per range; the workers' as
// Copy's per page, plus the worker's own (see DistributeExport).
func DistributeCopy(ctx context.Context, src, dst *aztables.Client, q *eventual.Queue, opts *Options) (Summary, error) {
	sum := Summary{Started: time.Now().UTC()}
	if q == nil {
		return sum, fmt.Errorf("%w: a queue is required", ErrInvalid)
	}
	o := opts.orDefault()
	cp, err := newCopier(src, dst, opts, &o)
	if err != nil {
		return sum, err
	}
	ranges, err := split(ctx, cp.s, o.From, o.To, o.Since, o.Ranges, o.Concurrency)
	if err != nil {
		return sum, err
	}
	for i, r := range ranges {
		if _, err := q.Enqueue(ctx, copyKind.New(copyJob{Source: cp.s.Name(), Target: cp.d.Name(), From: r.From, To: r.To})); err != nil {
			return sum, wrap(err, "enqueueing range %d", i)
		}
	}
	sum.Ended = time.Now().UTC()
	return sum, nil
}

// CopyHandler returns the handler of the intents DistributeCopy enqueued
// for the copy of the table of src into the table of dst: give it to
// eventual.NewWorker in every process that shares the copy, with the
// Options given to DistributeCopy. It takes that copy's intents only (other
// tables', or a range outside opts' From and To, fail and are poisoned
// after the worker's MaxDeliveries). A range some of whose entities the
// target cannot hold is copied but for them, and its delivery fails with
// ErrRejected naming them: it is copied again at each delivery (the same
// table), and once poisoned, eventual.Queue.Poisoned lists it with them.
// opts.Progress, if set, sees this process's progress. Safe for
// concurrent use.
func CopyHandler(src, dst *aztables.Client, opts *Options) eventual.Handler {
	progress := newTracker(opts.orDefault().Progress, 0)
	return copyKind.Handle(func(ctx context.Context, in eventual.Intent[copyJob]) error {
		o := opts.orDefault()
		cp, err := newCopier(src, dst, opts, &o)
		if err != nil {
			return err
		}
		cp.progress = progress
		j := in.Payload
		switch {
		case j.Source != cp.s.Name() || j.Target != cp.d.Name():
			return fmt.Errorf("%w: an intent to copy %.63q to %.63q, not %s to %s", ErrInvalid, j.Source, j.Target, cp.s.Name(), cp.d.Name())
		case j.From < o.From || o.To != "" && (j.To == "" || j.To > o.To) || j.To != "" && j.From >= j.To:
			return fmt.Errorf("%w: an intent to copy the range [%.40q, %.40q), outside [%.40q, %.40q)", ErrInvalid, j.From, j.To, o.From, o.To)
		}
		if err := cp.copyRange(ctx, span{From: j.From, To: j.To}); err != nil {
			return err
		}
		sum := cp.finish(Summary{})
		if sum.Rejected == 0 {
			return nil
		}
		var keys []string
		for _, r := range sum.Rejects[:min(len(sum.Rejects), 10)] {
			keys = append(keys, fmt.Sprintf("(%.40q, %.40q): %.200s", r.PartitionKey, r.RowKey, r.Reason))
		}
		return fmt.Errorf("%w: %d entities of the range [%.40q, %.40q), the first: %s", ErrRejected, sum.Rejected, j.From, j.To, strings.Join(keys, "; "))
	})
}
