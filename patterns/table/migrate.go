package table

import (
	"context"
	"errors"
	"reflect"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/retry"
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
	// current version (with their type property); Raced, the rows another writer changed between the
	// read and the write that were found current (or gone) when read again.
	Read, Upgraded, Raced int
	// Next is the cursor to resume from: every row before it has been
	// read and, if of an older version, upgraded. Empty when done.
	Next Cursor
}

// Migrate rewrites every row of q (default: the whole table) that is of an
// older version of its registered type as the current version, and records
// the type property on rows known only by their key prefix or as Untyped:
// a page is
// read (one round trip), its old rows upgraded in memory, and written back
// with Replace, each conditioned on the ETag read, through Submit (one
// transaction per partition and 100 rows). A row another writer changed in
// between is read again and, if still old, written again; one that is gone
// is left gone. Rows are written whole (Replace: see Register for what a
// row written whole keeps). Rows of no registered type end the migration with an
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
	rows := &Table[migrant]{client: ts.rows.client, name: ts.rows.name, direct: ts.rows.direct, types: ts, profile: ts.rows.profile}
	for {
		q.Cursor = prog.Next
		page, err := rows.QueryPage(ctx, &q)
		if err != nil {
			return prog, err
		}
		prog.Read += len(page.Items)
		var todo []*migrant
		for i := range page.Items {
			if m := &page.Items[i]; m.stale() {
				todo = append(todo, m)
			}
		}
		if err := ts.upgrade(ctx, rows, todo, opts.Batch, &prog); err != nil {
			return prog, err
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

// upgrade writes a page's stale rows as their current version, each
// conditioned on the ETag read, in transactions (Submit, which settles lost
// responses). Ops rolled back with a failing op, or not sent after it,
// still hold valid ETags and go again in a new round (each round settles
// at least one op, or ends with Submit's error); the op that failed
// (another writer changed or deleted the row) or whose outcome stayed
// unknown goes to upgradeOne.
func (ts *Types) upgrade(ctx context.Context, rows *Table[migrant], todo []*migrant, batch *BatchOptions, prog *MigrateProgress) error {
	bo := BatchOptions{ContinueOnError: true}
	if batch != nil {
		bo.Concurrency = batch.Concurrency
	}
	for len(todo) > 0 {
		ops := make([]Op, len(todo))
		for i, m := range todo {
			if ops[i] = m.op(ts); ops[i].Err() != nil {
				return ops[i].Err()
			}
		}
		res, err := submit(ctx, ts.rows.obs, ts.rows.client, ts.rows.name, ts.rows.direct, ts.rows.profile, ops, &bo)
		if err != nil && ctx.Err() != nil {
			return err
		}
		var again []*migrant
		progress := false
		for i, r := range res.Ops {
			switch {
			case r.Applied:
				prog.Upgraded++
				progress = true
			case errors.Is(r.Err, ErrNotApplied) && !errors.Is(r.Err, ErrOutcomeUnknown):
				again = append(again, todo[i])
			default:
				progress = true
				wrote, err := ts.upgradeOne(ctx, rows, todo[i].pk, todo[i].rk)
				if err != nil {
					return err
				}
				if wrote {
					prog.Upgraded++
				} else {
					prog.Raced++
				}
			}
		}
		if !progress {
			// Nothing applied and no op to blame (a transaction failed as
			// a whole, or validation): sending again would fail again.
			return err
		}
		todo = again
	}
	return nil
}

// upgradeOne upgrades one row whose batched write failed (another writer
// changed or deleted it, or its outcome is unknown): it reads the row and,
// if it is still stale, writes it conditioned on the ETag, reading again
// after a conflict with retry.Default's backoff. It reports whether it
// wrote the row.
func (ts *Types) upgradeOne(ctx context.Context, rows *Table[migrant], pk, rk string) (bool, error) {
	wrote := false
	p := retry.Default
	p.Retryable = func(err error) bool {
		return errors.Is(err, ErrPreconditionFailed) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrOutcomeUnknown)
	}
	err := p.Do(ctx, func(ctx context.Context) error {
		m, _, _, _, err := rows.get(ctx, "migrate", pk, rk, false)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil // deleted meanwhile: gone stays gone
		case err != nil:
			return retrycore.Stop(err)
		case !m.stale():
			return nil
		}
		_, err = submit(ctx, ts.rows.obs, ts.rows.client, ts.rows.name, ts.rows.direct, ts.rows.profile, []Op{m.op(ts)}, nil)
		wrote = err == nil
		return err
	})
	return wrote, err
}

// migrant is a row as Migrate reads it: its registered type and version,
// the value upgraded to the current version, and what its conditional
// write needs.
type migrant struct {
	et       *entityType // nil for a row of no registered type (UnknownAsDynamic)
	version  int
	untagged bool // recognised by Untyped or a prefix: no type property
	value    reflect.Value
	pk, rk   string
	etag     azcore.ETag
	writes   string
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
	m.et, m.version, m.etag, m.untagged = et, version, etag, true
	for i := range props {
		switch p := &props[i]; string(p.name) {
		case ts.prop:
			m.untagged = false
		case "PartitionKey":
			m.pk = stringOf(p.value)
		case "RowKey":
			m.rk = stringOf(p.value)
		case reserved.WriteProperty:
			if p.value.kind == 's' {
				m.writes = cleanHistory(stringOf(p.value))
			}
		}
	}
	if !m.stale() {
		return nil
	}
	m.value = reflect.New(et.codec.typ).Elem()
	return et.decode(props, version, m.value, etag, nil, ts.prop)
}

// stale reports whether Migrate rewrites the row: of an older version, or
// without its type property.
func (m *migrant) stale() bool {
	return m.et != nil && (m.version != m.et.version || m.untagged)
}

// op is the conditional Replace that writes m as its current version, as
// a registered type's UpdateOp would.
func (m *migrant) op(ts *Types) Op {
	kind := aztables.TransactionTypeUpdateReplace
	e, err := m.et.codec.encode(make([]byte, 0, 256), m.value, m.pk, m.rk, nil, false, ts.rows.profile)
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
