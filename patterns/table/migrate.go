package table

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// MigrateOptions configures Types.Migrate. A nil *MigrateOptions means
// defaults.
type MigrateOptions struct {
	// Query selects the rows to migrate; its Cursor is where to resume (a
	// MigrateProgress.Next). Its Select is ignored: rows are read whole,
	// since they are written back whole. Default (nil): the whole table.
	Query *Query
	// Progress, when set, is called after each page with the counts so far
	// and the cursor to resume from.
	Progress func(MigrateProgress)
	// Batch configures the transactions that write each page's upgrades.
	// Default: Submit's.
	Batch *BatchOptions
}

// MigrateProgress counts what Migrate has done.
type MigrateProgress struct {
	// Read is the rows read; Upgraded, those written as their type's
	// current version; Raced, the rows another writer changed between the
	// read and the write that were found current (or gone) when read again.
	Read, Upgraded, Raced int
	// Next is the cursor to resume from: every row before it has been
	// read and, if of an older version, upgraded. Empty when done.
	Next Cursor
}

// Migrate rewrites every row of q (default: the whole table) that is of an
// older version of its registered type as the current version: a page is
// read (one round trip), its old rows upgraded in memory, and written back
// with Replace, each conditioned on the ETag read, through Submit (one
// transaction per partition and 100 rows). A row another writer changed in
// between is read again and, if still old, written again; one that is gone
// is left gone. Rows of no registered type end the migration with an
// ErrEntityType error (or, with UnknownAsDynamic, are left alone), as do
// rows of a version newer than registered.
//
// Migrate is resumable and idempotent: after an error or a cancellation,
// call it again with Query.Cursor set to the last MigrateProgress.Next (the
// returned one, or the last reported to Progress); rows already upgraded
// are read and left alone. A crash between a page's writes and its
// progress report only means that page is read again.
func (ts *Types) Migrate(ctx context.Context, opts *MigrateOptions) (MigrateProgress, error) {
	if opts == nil {
		opts = &MigrateOptions{}
	}
	q := Query{}
	if opts.Query != nil {
		q = *opts.Query
	}
	q.Select = nil // a row is replaced whole: read it whole
	var prog MigrateProgress
	prog.Next = q.Cursor
	rows := &Table[migrant]{client: ts.rows.client, name: ts.rows.name, direct: ts.rows.direct, types: ts}
	for {
		q.Cursor = prog.Next
		page, err := rows.QueryPage(ctx, &q)
		if err != nil {
			return prog, err
		}
		prog.Read += len(page.Items)
		var ops []Op
		var old []*migrant
		for i := range page.Items {
			m := &page.Items[i]
			if m.et == nil || m.version == m.et.version {
				continue
			}
			o := m.op(ts)
			if err := o.Err(); err != nil {
				return prog, err
			}
			ops, old = append(ops, o), append(old, m)
		}
		if len(ops) > 0 {
			res, err := submit(ctx, ts.rows.client, ts.rows.direct, ops, opts.Batch)
			if err != nil && ctx.Err() != nil {
				return prog, err
			}
			for i, r := range res.Ops {
				if r.Applied {
					prog.Upgraded++
					continue
				}
				upgraded, err := ts.upgradeOne(ctx, rows, old[i].pk, old[i].rk)
				if err != nil {
					return prog, err
				}
				if upgraded {
					prog.Upgraded++
				} else {
					prog.Raced++
				}
			}
		}
		prog.Next = page.Next
		if opts.Progress != nil {
			opts.Progress(prog)
		}
		if prog.Next == "" {
			return prog, nil
		}
	}
}

// upgradeOne upgrades one row whose batched write failed (another writer
// changed it, its transaction rolled back, or its outcome is unknown):
// read it; if it is still old, write it conditioned on the ETag, and again
// on a conflict. It reports whether it wrote the row.
func (ts *Types) upgradeOne(ctx context.Context, rows *Table[migrant], pk, rk string) (bool, error) {
	for attempt := 0; ; attempt++ {
		m, _, _, _, err := rows.get(ctx, "migrate", pk, rk, false)
		switch {
		case errors.Is(err, ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		case m.et == nil || m.version == m.et.version:
			return false, nil
		case attempt == 10:
			return false, &Error{Op: "migrate", Table: ts.rows.name, PartitionKey: pk, RowKey: rk, Err: fmt.Errorf("%w: the row kept changing", ErrPreconditionFailed)}
		}
		_, err = submit(ctx, ts.rows.client, ts.rows.direct, []Op{m.op(ts)}, nil)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, ErrPreconditionFailed) && !errors.Is(err, ErrOutcomeUnknown) {
			return false, err
		}
	}
}

// migrant is a row as Migrate reads it: its registered type and version,
// the value upgraded to the current version, and what its conditional
// write needs.
type migrant struct {
	et      *entityType // nil for a row of no registered type (UnknownAsDynamic)
	version int
	value   reflect.Value
	pk, rk  string
	etag    azcore.ETag
	writes  string
}

// decodeMigrant resolves and upgrades a scanned row for Migrate.
func (ts *Types) decodeMigrant(props []property, etag azcore.ETag, m *migrant) error {
	et, version, err := ts.resolve(props)
	if err != nil {
		if et == nil && ts.dynamic {
			return nil
		}
		return err
	}
	m.et, m.version, m.etag = et, version, etag
	for i := range props {
		switch p := &props[i]; string(p.name) {
		case "PartitionKey":
			m.pk = stringOf(p.value)
		case "RowKey":
			m.rk = stringOf(p.value)
		case WriteProperty:
			if p.value.kind == 's' {
				m.writes = cleanHistory(stringOf(p.value))
			}
		}
	}
	if version == et.version {
		return nil
	}
	m.value = reflect.New(et.codec.typ).Elem()
	return et.decode(props, version, m.value, etag, nil, ts.prop)
}

// op is the conditional Replace that writes m as its current version, as
// a registered type's UpdateOp would.
func (m *migrant) op(ts *Types) Op {
	kind := aztables.TransactionTypeUpdateReplace
	e, err := m.et.codec.encode(make([]byte, 0, 256), m.value, m.pk, m.rk, nil)
	if err == nil {
		e, err = tagEntity(e, m.value, ts, m.et)
	}
	if err != nil {
		return Op{kind: kind, pk: m.pk, rk: m.rk, err: relabel(err, "migrate", ts.rows.name)}
	}
	o := newOp(kind, m.pk, m.rk, e.body, &m.etag)
	if e.stampable() {
		o.stamped, o.prev = true, m.writes
		o.size += stampSize
	}
	return o
}
