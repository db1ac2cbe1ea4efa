package encryption

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/patterns/table"
)

// ReencryptOptions configures Reencrypt. A nil *ReencryptOptions means
// defaults.
type ReencryptOptions struct {
	// Query selects the rows to visit (its Filter and PageSize), and its
	// Cursor resumes an earlier run (Progress.Cursor). A Filter that names
	// an encrypted field is refused (ErrInvalid), as by Query. Its Select is
	// ignored (every property is read, so that no encrypted value is
	// missed) and its Limit must be 0 (ErrInvalid): a run that stopped
	// early would report Done with rows left under an old key. Default
	// (nil): the whole table.
	Query *table.Query
	// Indexes also recomputes the blind index of every row that has an
	// indexed field and rewrites the rows whose stored blind value
	// differs: after a change of Options.IndexKey or of an Index's
	// Normalize. It decrypts every indexed value to compare. Default:
	// false (only rows with a value under an old key are rewritten).
	Indexes bool
	// OnError, if set, is called with a row that cannot be re-encrypted
	// (an *Error: a value that fails to decrypt, an unknown key id, a
	// property of the same name that is not encrypted at all, such as a
	// row of another entity type). If it returns nil the row is skipped
	// and counted in Progress.Skipped; an error from it stops Reencrypt,
	// which returns that error. Default: nil, such a row stops Reencrypt
	// with its error. Errors of the service are never passed to it.
	OnError func(partitionKey, rowKey string, err error) error
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
	// Skipped counts rows OnError skipped: they are still under their
	// old key (or not encrypted).
	Skipped int
	// Cursor resumes the run (as ReencryptOptions.Query.Cursor): every
	// row before it is done. Empty with Done.
	Cursor table.Cursor
	// Done reports that every row was visited. Every row the Query
	// selects is then under the current key unless Skipped is not 0.
	Done bool
}

// errCurrent stops a Modify of a row that no longer needs a rewrite.
var errCurrent = errors.New("already current")

// Reencrypt rewrites the rows whose encrypted values are under a key other
// than the KeyProvider's current one (read once, when Reencrypt starts:
// the whole run writes under that key), re-encrypting those values and
// recomputing their blind indexes, page by page. Each row is rewritten
// with one Fields merge of its encrypted and index properties, conditioned
// on the ETag it was read with, so a concurrent writer's change is never
// overwritten: on a conflict the row is read again and rewritten only if
// it still needs it (table.Modify). Other properties are never written.
//
// Cost: 1 round trip per page, plus 1 per row rewritten (+2 per
// conflict). It returns how far it got; after an error or a cancelled
// context, run it again with Query.Cursor = Progress.Cursor to resume
// (rows done since the cursor are found current and skipped). A row that
// fails to decrypt stops it with that row's ErrDecrypt or ErrUnknownKey,
// unless OnError skips it.
//
// Reencrypt only re-encrypts values already encrypted. To adopt
// encryption on existing plaintext data, read the rows with a plain
// table.Table (of T or table.Dynamic) and write each back through this
// Table with Update, conditioned on the ETag read (Merge writes the
// encrypted fields and their blind indexes); rows of other entity types
// sharing the table and a property name are skipped with OnError.
func (t *Table[T]) Reencrypt(ctx context.Context, opts *ReencryptOptions) (_ Progress, err error) {
	ctx, sp := t.obs.Start(ctx, opReencrypt, t.tbl.Name(), "")
	defer func() { sp.EndWrite(err, false) }()
	var o ReencryptOptions
	if opts != nil {
		o = *opts
	}
	var q table.Query
	if o.Query != nil {
		q = *o.Query
	}
	p := Progress{Cursor: q.Cursor}
	if q.Limit != 0 {
		return p, &Error{Op: "reencrypt", Table: t.tbl.Name(), Err: fmt.Errorf("%w: Query.Limit would end the run before every row is visited", ErrInvalid)}
	}
	q.Select = nil
	if err := t.checkFilter("reencrypt", q.Filter); err != nil {
		return p, err // it would match nothing and report Done
	}
	k, err := t.currentKey(ctx, "reencrypt")
	if err != nil {
		return p, err
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
			stale, err := t.stale(ctx, d, k.id, o.Indexes)
			rewritten := false
			if err == nil && stale {
				rewritten, err = t.rewrite(ctx, d, &k, o.Indexes)
			}
			var e *Error
			switch {
			case err != nil && (o.OnError == nil || !errors.As(err, &e)):
				return p, err
			case err != nil:
				if err := o.OnError(d.PartitionKey, d.RowKey, err); err != nil {
					return p, err
				}
				p.Skipped++
			case rewritten:
				p.Rewritten++
			case stale:
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
// (or not encrypted at all, which the rewrite reports), or, when indexes,
// one whose stored blind value is not the one its value has now.
func (t *Table[T]) stale(ctx context.Context, d table.Dynamic, id string, indexes bool) (bool, error) {
	for _, f := range t.fields {
		pv, ok := d.Properties[f]
		if !ok {
			continue
		}
		b, _ := pv.([]byte)
		if got, _, ok := header(b); !ok || got != id {
			return true, nil
		}
		ix := t.indexes[f]
		if !indexes || ix == nil {
			continue
		}
		v, kid, err := t.decryptValue(ctx, &d, f, pv)
		if err == nil {
			var bv string
			if bv, err = t.blind(ix, v); err == nil && d.Properties[ix.Property] != bv {
				return true, nil
			}
		}
		if err != nil {
			return false, &Error{Op: "reencrypt", Table: t.tbl.Name(), PartitionKey: d.PartitionKey, RowKey: d.RowKey, Property: f, KeyID: kid, Err: err}
		}
	}
	return false, nil
}

// rewrite re-encrypts d's encrypted values under k with one merge
// conditioned on d's ETag; on a conflict it reads the row again and
// rewrites it if it is still stale. It reports whether it wrote.
func (t *Table[T]) rewrite(ctx context.Context, d table.Dynamic, k *sealKey, indexes bool) (bool, error) {
	names := make([]string, 0, 2*len(t.fields))
	for _, f := range t.fields {
		names = append(names, f)
		if ix := t.indexes[f]; ix != nil {
			names = append(names, ix.Property)
		}
	}
	mode := table.Fields(names...)
	w, err := t.resealed(ctx, d, k)
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
	_, err = t.tbl.Modify(ctx, d.PartitionKey, d.RowKey, func(cur *table.Dynamic) error {
		stale, err := t.stale(ctx, *cur, k.id, indexes)
		if err != nil {
			return err
		}
		if !stale {
			return errCurrent
		}
		w, err := t.resealed(ctx, *cur, k)
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
// k: d's keys and Meta, and only those values and their blind indexes.
func (t *Table[T]) resealed(ctx context.Context, d table.Dynamic, k *sealKey) (table.Dynamic, error) {
	if err := t.unseal(ctx, "reencrypt", &d); err != nil {
		return table.Dynamic{}, err
	}
	w := table.Dynamic{Meta: d.Meta, PartitionKey: d.PartitionKey, RowKey: d.RowKey, Properties: map[string]any{}}
	for _, f := range t.fields {
		if v, ok := d.Properties[f]; ok {
			w.Properties[f] = v
		}
	}
	return w, t.seal(ctx, "reencrypt", &w, k)
}
