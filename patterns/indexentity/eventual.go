package indexentity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// Handler returns the handler of the index's intents, for an
// eventual.Worker on Options.Queue (with the handlers of other kinds):
//
//	w, err := eventual.NewWorker(q, []eventual.Handler{byName.Handler()}, nil)
//
// It reconciles from the source of truth: it reads the entity the intent
// names, then puts the entity's id into the list of the value it has now
// and takes it out of the lists of the intent's other values, writing only
// the lists that differ (each with its ETag, again on a conflict), then
// reads the entity again and, if it changed in the meantime, does it all
// again. Duplicate, late and reordered intents are therefore harmless:
// every run leaves the lists as the entity is. Each intent costs 2 entity
// reads, 1 read per value named (the intent's values, and the entity's
// current one), and 1 write per list that differs.
//
// The same-partition store starts no intents; its Handler is a handler of
// no kind, which eventual.NewWorker refuses.
func (x *Index[T]) Handler() eventual.Handler {
	if x.store == samePartition {
		return eventual.Handler{}
	}
	return x.kind.Handle(func(ctx context.Context, in eventual.Intent[change]) error {
		return x.reconcile(ctx, in.Payload)
	})
}

// errMoved: the entity changed while the lists were brought in line with
// it, so the pass starts again.
var errMoved = errors.New("indexentity: the entity changed while its lists were reconciled")

// reconcile brings the lists of c's values, and of the entity's current
// value, in line with the entity (c.PartitionKey, c.RowKey) as it is.
func (x *Index[T]) reconcile(ctx context.Context, c change) error {
	if err := checkKeys(c.PartitionKey, c.RowKey); err != nil {
		// Not an intent this Index starts: never read or listed.
		return fmt.Errorf("%w: an intent naming no entity this index writes: %w", ErrCorrupt, err)
	}
	p := x.retry
	p.Retryable = func(err error) bool { return errors.Is(err, errMoved) }
	return p.Do(ctx, func(ctx context.Context) error {
		e, err := x.ent.Get(ctx, c.PartitionKey, c.RowKey, nil)
		cur := e.Value
		exists := err == nil
		if err != nil && !errors.Is(err, table.ErrNotFound) {
			return err
		}
		values := slices.Clone(c.Values)
		now := ""
		if exists {
			if now, err = x.valueOf(cur); err != nil {
				return err
			}
			values = append(values, now)
		}
		slices.Sort(values)
		for _, v := range slices.Compact(values) {
			if err := x.step("ensure"); err != nil {
				return err
			}
			if err := x.ensure(ctx, c.PartitionKey, c.RowKey, v, exists && v == now); err != nil {
				return err
			}
		}
		if err := x.step("verify"); err != nil {
			return err
		}
		again, err := x.ent.Get(ctx, c.PartitionKey, c.RowKey, nil)
		switch {
		case errors.Is(err, table.ErrNotFound):
			if exists {
				return errMoved
			}
			return nil
		case err != nil:
			return err
		case !exists || again.ETag != cur.ETag:
			return errMoved
		}
		return nil
	})
}

// ensure makes value's list hold entity (pk, rk) or not, as in says:
// read, compare, and write only when it differs, with the ETag read; on a
// conflict or an unknown outcome it reads again (the read is the
// verification: the list either shows the write or needs it again).
func (x *Index[T]) ensure(ctx context.Context, pk, rk, value string, in bool) error {
	id := x.idOf(pk, rk)
	p := x.retry
	p.Retryable = isConflict
	return p.Do(ctx, func(ctx context.Context) error {
		var l list
		var err error
		if x.store == blobs {
			l, err = x.readBlob(ctx, value)
		} else {
			lpk, lrk, kerr := x.listKey(pk, value)
			if kerr != nil {
				return kerr
			}
			l, err = x.readList(ctx, lpk, lrk)
		}
		if err != nil {
			return err
		}
		var changed bool
		if l.ids, changed = set(l.ids, id, in); !changed {
			return nil
		}
		if x.store == blobs {
			return x.writeBlob(ctx, value, l)
		}
		op, _, err := x.listOp(l, value)
		if err != nil {
			return err
		}
		_, err = x.ix.Submit(ctx, []table.Op{op}, nil)
		var oe *table.OpError
		if errors.Is(err, table.ErrOutcomeUnknown) || errors.As(err, &oe) &&
			(errors.Is(oe, table.ErrPreconditionFailed) || errors.Is(oe, table.ErrAlreadyExists) || errors.Is(oe, table.ErrNotFound)) {
			return &conflict{err}
		}
		return err
	})
}

// readBlob reads value's list from its blob: 1 round trip. A missing blob
// is an empty list.
func (x *Index[T]) readBlob(ctx context.Context, value string) (list, error) {
	name, err := x.blobName(value)
	if err != nil {
		return list{}, err
	}
	resp, err := x.blobs.NewBlobClient(name).DownloadStream(ctx, nil)
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return list{}, nil
	}
	if err != nil {
		return list{}, fmt.Errorf("indexentity: reading blob %q: %w", name, redact.Error(err))
	}
	defer resp.Body.Close()
	tooLarge := func(n int64) error {
		return fmt.Errorf("%w: %w: blob %q holds %d bytes or more, more than a list's %d (MaxBlobSize)", ErrCorrupt, table.ErrTooLarge, name, n, x.maxBlob)
	}
	if resp.ContentLength != nil && *resp.ContentLength > int64(x.maxBlob) {
		return list{}, tooLarge(*resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(x.maxBlob)+1))
	if err != nil {
		return list{}, fmt.Errorf("indexentity: reading blob %q: %w", name, redact.Error(err))
	}
	if len(data) > x.maxBlob {
		return list{}, tooLarge(int64(len(data)))
	}
	ids, err := blobIDs(data)
	if err == nil {
		err = x.checkIDs("", ids)
	}
	if err != nil {
		return list{}, fmt.Errorf("%w (blob %q)", err, name)
	}
	l := list{found: true, ids: ids}
	if resp.ETag != nil {
		l.etag = *resp.ETag
	}
	return l, nil
}

// writeBlob stores l's ids in value's blob, conditioned on the ETag read
// (If-None-Match * when there was none): an upload, or a delete when the
// list is empty. 1 round trip. Another writer's change in between (412,
// 409, 404) and an unknown outcome are conflicts: read again.
func (x *Index[T]) writeBlob(ctx context.Context, value string, l list) error {
	name, err := x.blobName(value)
	if err != nil {
		return err
	}
	if err := x.step("blob"); err != nil {
		return err
	}
	cond := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{}}
	if l.found {
		cond.ModifiedAccessConditions.IfMatch = &l.etag
	} else {
		star := azcore.ETagAny
		cond.ModifiedAccessConditions.IfNoneMatch = &star
	}
	switch {
	case len(l.ids) == 0 && l.found:
		_, err = x.blobs.NewBlobClient(name).Delete(ctx, &blob.DeleteOptions{AccessConditions: cond})
	case len(l.ids) > 0:
		text := blobText(l.ids)
		if len(text) > x.maxBlob {
			return fmt.Errorf("indexentity: the list of value %.40q of index %s: %w: %d ids in %d bytes, more than a blob list's %d (MaxBlobSize)",
				value, x.name, table.ErrTooLarge, len(l.ids), len(text), x.maxBlob)
		}
		_, err = x.blobs.NewBlockBlobClient(name).UploadBuffer(ctx, text, &blockblob.UploadBufferOptions{AccessConditions: cond})
	}
	err = redact.Error(err)
	var re *azcore.ResponseError
	if errors.Is(err, retry.ErrOutcomeUnknown) || errors.As(err, &re) && (re.StatusCode == 412 || re.StatusCode == 409 || re.StatusCode == 404) {
		return &conflict{fmt.Errorf("indexentity: writing blob %q: %w", name, err)}
	}
	if err != nil {
		return fmt.Errorf("indexentity: writing blob %q: %w", name, err)
	}
	return nil
}
