package encryption

import (
	"context"
	"errors"

	"github.com/tablekit/tablekit/patterns/table"
)

// ReencryptOptions configures Reencrypt. A nil *ReencryptOptions means
// defaults.
type ReencryptOptions struct {
	// Query selects the rows to visit, and its Cursor resumes an earlier
	// run (Progress.Cursor). Default (nil): the whole table.
	Query *table.Query
	// Indexes also recomputes the blind index of every row that has an
	// indexed field, whatever its key id: after a change of
	// Options.IndexKey or of an Index's Normalize. Default: false (only
	// rows with a value under an old key are rewritten).
	Indexes bool
	// Progress, if set, is called after each page of rows is done. An
	// error from it stops Reencrypt, which returns that error.
	Progress func(Progress) error
}

// Progress reports how far Reencrypt got.
type Progress struct {
	Scanned   int // rows read
	Rewritten int // rows rewritten under the current key
	// Raced counts rows another writer changed or deleted between the
	// read and the rewrite and that then needed no rewrite.
	Raced int
	// Cursor resumes the run (as ReencryptOptions.Query.Cursor): every
	// row before it is done. Empty with Done.
	Cursor table.Cursor
	Done   bool // every row was visited
}

// errCurrent stops a Modify of a row that no longer needs a rewrite.
var errCurrent = errors.New("already current")

// Reencrypt rewrites the rows whose encrypted values are under a key other
// than the KeyProvider's current one (as it is when Reencrypt starts),
// re-encrypting those values and recomputing their blind indexes, page by
// page. Each row is rewritten with one Fields merge of its encrypted and
// index properties, conditioned on the ETag it was read with, so a
// concurrent writer's change is never overwritten: on a conflict the row
// is read again and rewritten only if it still needs it (table.Modify).
// Other properties are never written.
//
// Cost: 1 round trip per page, plus 1 per row rewritten (+2 per
// conflict). It returns how far it got; after an error or a cancelled
// context, run it again with Query.Cursor = Progress.Cursor to resume
// (rows done since the cursor are found current and skipped). A row that
// fails to decrypt stops it with that row's ErrDecrypt or ErrUnknownKey.
func (t *Table[T]) Reencrypt(ctx context.Context, opts *ReencryptOptions) (Progress, error) {
	var o ReencryptOptions
	if opts != nil {
		o = *opts
	}
	var q table.Query
	if o.Query != nil {
		q = *o.Query
	}
	p := Progress{Cursor: q.Cursor}
	id, _, err := t.keys.CurrentKey(ctx)
	if err != nil {
		return p, &Error{Op: "reencrypt", Table: t.tbl.Name(), Err: err}
	}
	for page, err := range t.tbl.Pages(ctx, &q) {
		if err != nil {
			return p, err
		}
		for _, d := range page.Items {
			if err := ctx.Err(); err != nil {
				return p, err
			}
			p.Scanned++
			if !t.stale(d, id, o.Indexes) {
				continue
			}
			rewritten, err := t.rewrite(ctx, d, id, o.Indexes)
			if err != nil {
				return p, err
			}
			if rewritten {
				p.Rewritten++
			} else {
				p.Raced++
			}
		}
		p.Cursor, p.Done = page.Next, page.Next == ""
		if o.Progress != nil {
			if err := o.Progress(p); err != nil {
				return p, err
			}
		}
	}
	p.Done = true
	return p, nil
}

// stale reports whether d has a value to rewrite: one not under key id
// (or not encrypted at all, which the rewrite reports), or any indexed
// value when indexes.
func (t *Table[T]) stale(d table.Dynamic, id string, indexes bool) bool {
	for _, f := range t.fields {
		pv, ok := d.Properties[f]
		if !ok {
			continue
		}
		if indexes && t.indexes[f] != nil {
			return true
		}
		b, _ := pv.([]byte)
		if got, _, ok := header(b); !ok || got != id {
			return true
		}
	}
	return false
}

// rewrite re-encrypts d's encrypted values with one merge conditioned on
// d's ETag; on a conflict it reads the row again and rewrites it if it is
// still stale. It reports whether it wrote.
func (t *Table[T]) rewrite(ctx context.Context, d table.Dynamic, id string, indexes bool) (bool, error) {
	names := make([]string, 0, 2*len(t.fields))
	for _, f := range t.fields {
		names = append(names, f)
		if ix := t.indexes[f]; ix != nil {
			names = append(names, ix.Property)
		}
	}
	mode := table.Fields(names...)
	w, err := t.resealed(ctx, d)
	if err != nil {
		return false, err
	}
	_, err = t.tbl.Update(ctx, w, d.ETag, mode)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, table.ErrOutcomeUnknown):
		return false, err
	case errors.Is(err, table.ErrNotFound):
		return false, nil // deleted since it was read
	case !errors.Is(err, table.ErrPreconditionFailed):
		return false, err
	}
	_, _, err = t.tbl.Modify(ctx, d.PartitionKey, d.RowKey, func(cur *table.Dynamic) error {
		if !t.stale(*cur, id, indexes) {
			return errCurrent
		}
		w, err := t.resealed(ctx, *cur)
		if err != nil {
			return err
		}
		*cur = w
		return nil
	}, &table.ModifyOptions{Mode: mode})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errCurrent), errors.Is(err, table.ErrNotFound) && !errors.Is(err, table.ErrOutcomeUnknown):
		return false, nil
	}
	return false, err
}

// resealed returns the write that re-encrypts d's encrypted values under
// the current key: d's keys and Meta, and only those values and their
// blind indexes.
func (t *Table[T]) resealed(ctx context.Context, d table.Dynamic) (table.Dynamic, error) {
	if err := t.unseal(ctx, "reencrypt", &d); err != nil {
		return table.Dynamic{}, err
	}
	w := table.Dynamic{Meta: d.Meta, PartitionKey: d.PartitionKey, RowKey: d.RowKey, Properties: map[string]any{}}
	for _, f := range t.fields {
		if v, ok := d.Properties[f]; ok {
			w.Properties[f] = v
		}
	}
	return w, t.seal(ctx, "reencrypt", &w)
}
