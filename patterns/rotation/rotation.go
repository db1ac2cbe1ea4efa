package rotation

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keycursor"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/table"
)

// ErrInvalid is the sentinel for a configuration or request rejected
// before the network: a nil service client, a prefix or Period that cannot
// make table names, a T the table package refuses, a time range the wrong
// way round, a query or op the table package refuses, a Sweep cutoff
// within the write window, invalid keys (which also match
// [table.ErrInvalidKey]). It matches [table.ErrInvalid].
var ErrInvalid = invalid.New("rotation: invalid request")

// ErrExpired is the sentinel for a write to a closed period (one that
// ended more than Options.Grace ago: refused before the network), or to a
// period whose table is being deleted (409 TableBeingDeleted). The write
// was not applied, unless the error also matches table.ErrOutcomeUnknown:
// an attempt whose response was lost may have been applied just before
// the period's table went (and went with it).
var ErrExpired = errors.New("rotation: period expired")

// MaxClockSkew is how far the clocks of the hosts that write and sweep one
// rotation may disagree: Sweep deletes only periods closed for at least
// this long, so no writer still takes them for open (see the package
// documentation, "Unique names").
const MaxClockSkew = 5 * time.Minute

// defaultGrace is Options.Grace when it is not set.
const defaultGrace = time.Hour

// Period cuts time into consecutive periods, each stored in a table of its
// own. Hour, Day and Month are the usual ones; a Period of your own needs
// both fields.
type Period struct {
	// Layout formats a period's start (in UTC) for its table's name, as
	// time.Format does: digits only, fixed width, and exact enough that
	// parsing the name gives the start back ("20060102" for days).
	Layout string
	// Start returns the start of the period containing t: Start(Start(t))
	// == Start(t), and Start is monotonic. It must depend only on t.
	Start func(t time.Time) time.Time
}

// Hour, Day and Month are periods of an hour, a day and a calendar month,
// in UTC. Their table names end in 10, 8 and 6 digits: "logins2024073118",
// "logins20240731", "logins202407".
var (
	Hour = Period{Layout: "2006010215", Start: func(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }}
	Day  = Period{Layout: "20060102", Start: func(t time.Time) time.Time {
		y, m, d := t.UTC().Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}}
	Month = Period{Layout: "200601", Start: func(t time.Time) time.Time {
		y, m, _ := t.UTC().Date()
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}}
)

// Options configures Tables. A nil *Options means defaults.
type Options struct {
	// Period is how time is cut into tables. Default (zero): Day.
	Period Period
	// Grace is how long after its end a period still takes writes, for
	// late arrivals: later writes fail with ErrExpired before the network,
	// and Sweep deletes only periods past it (and MaxClockSkew). Default
	// (0): one hour. Backfilling old periods needs a Grace
	// that reaches back to them.
	Grace time.Duration
	// Concurrency is the most queries Range runs at once. Default (0): 8.
	Concurrency int
	// Now is the clock that decides which periods are closed. Default
	// (nil): time.Now. For tests and examples with fixed dates.
	Now func() time.Time
	// Telemetry receives the spans, metrics and log records of the
	// Tables' operations. Default (nil): the global OpenTelemetry
	// providers and slog.Default().
	Telemetry *table.Telemetry
	// CursorKey seals the cursors of RangePage and of the periods' tables
	// (Table), as [table.Options] CursorKey does for a table: give the
	// application's key when cursors reach end users. Default (nil):
	// plain cursors, which show the keys of the last entity of a page.
	CursorKey *table.CursorKey
}

// Tables routes entities of type T to a table per period, named by a
// prefix and the period's start ("logins20240731"), created on first use,
// read across periods as one table, and deleted a whole period at a time.
// It holds no state besides its configuration (the periods are discovered
// by listing tables), so any number of Tables in any number of processes
// may share a prefix. It is safe for concurrent use.
type Tables[T any] struct {
	svc    *aztables.ServiceClient
	prefix string
	period Period
	grace  time.Duration
	conc   int
	now    func() time.Time
	keyFn  func(*T) (pk, rk string)
	digits int // the length of a period's part of a name
	obs    *obs.Obs
	// cursorKey seals the cursors, nil for plain ones.
	cursorKey *table.CursorKey
}

var prefixRE = regexp.MustCompile(`^[A-Za-z](?:[A-Za-z0-9]*[A-Za-z])?$`)

// New returns the Tables of the rotation whose tables are named prefix
// followed by a period's start: prefix must be letters and digits,
// starting and ending with a letter (so that no other rotation's names,
// nor names of other tables, look like this one's), and short enough for
// a table name (63 characters with the period's digits). svc and prefix
// are required; a nil opts means defaults. It takes the service client,
// not a [table.Table], because it creates, lists and deletes tables; each
// period's table holds T's entities, one row each. T is checked as
// [table.New] checks it; give its keys with WithKeys when T has no key
// fields.
func New[T any](svc *aztables.ServiceClient, prefix string, opts *Options) (*Tables[T], error) {
	if svc == nil {
		return nil, fmt.Errorf("%w: nil service client", ErrInvalid)
	}
	if opts == nil {
		opts = &Options{}
	}
	r := &Tables[T]{svc: svc, prefix: prefix, period: opts.Period, grace: opts.Grace, conc: opts.Concurrency, now: opts.Now, obs: obs.New((*obs.Config)(opts.Telemetry)), cursorKey: opts.CursorKey}
	if r.period.Layout == "" && r.period.Start == nil {
		r.period = Day
	}
	if r.grace == 0 {
		r.grace = defaultGrace
	}
	if r.conc == 0 {
		r.conc = 8
	}
	if r.now == nil {
		r.now = time.Now
	}
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("%w: prefix %q: want letters and digits, starting and ending with a letter", ErrInvalid, prefix)
	}
	if r.grace < 0 || r.conc < 0 {
		return nil, fmt.Errorf("%w: Grace %v, Concurrency %d", ErrInvalid, r.grace, r.conc)
	}
	if err := checkPeriod(r.period); err != nil {
		return nil, err
	}
	r.digits = len(time.Unix(0, 0).UTC().Format(r.period.Layout))
	if n := len(prefix) + r.digits; n > 63 {
		return nil, fmt.Errorf("%w: prefix %q and %d digits of period make %d characters, more than a table name's 63", ErrInvalid, prefix, r.digits, n)
	}
	if _, err := table.New[T](table.NewClient(svc, r.Name(time.Unix(0, 0))), nil); err != nil {
		return nil, invalid.Mark(ErrInvalid, err)
	}
	return r, nil
}

// checkPeriod checks a Period on sample times: a layout of digits only,
// of one width, that parses back to the start; a Start that is idempotent.
func checkPeriod(p Period) error {
	if p.Layout == "" || p.Start == nil {
		return fmt.Errorf("%w: a Period needs a Layout and a Start", ErrInvalid)
	}
	width := -1
	for _, t := range []time.Time{
		time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 0), time.Date(2024, 2, 29, 23, 59, 59, 999, time.UTC),
		time.Date(2024, 12, 31, 12, 30, 0, 0, time.FixedZone("", -7*3600)), time.Date(9999, 12, 1, 0, 0, 0, 0, time.UTC),
	} {
		s := p.Start(t)
		label := s.UTC().Format(p.Layout)
		if width < 0 {
			width = len(label)
		}
		back, err := time.ParseInLocation(p.Layout, label, time.UTC)
		switch {
		case !digitsOnly(label) || len(label) != width:
			return fmt.Errorf("%w: Period layout %q gives %q for %v: want digits of one width", ErrInvalid, p.Layout, label, t)
		case s.After(t) || !p.Start(s).Equal(s):
			return fmt.Errorf("%w: Period Start(%v) = %v: want the start of the period containing it, idempotent", ErrInvalid, t, s)
		case err != nil || !back.Equal(s):
			return fmt.Errorf("%w: Period layout %q loses part of the start %v (parses back as %v)", ErrInvalid, p.Layout, s, back)
		}
	}
	return nil
}

func digitsOnly(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// WithKeys returns Tables that compute each entity's keys with fn, as
// table.Table.WithKeys does, for types without key fields.
func (r *Tables[T]) WithKeys(fn func(*T) (pk, rk string)) *Tables[T] {
	c := *r
	c.keyFn = fn
	return &c
}

// Name returns the name of the table of the period containing at: the
// prefix and the period's start. No round trip.
func (r *Tables[T]) Name(at time.Time) string {
	return r.prefix + r.period.Start(at).UTC().Format(r.period.Layout)
}

// Table returns the typed table of the period containing at, for reads
// and writes inside one period (Get, Query, Update, Delete, Submit). No
// round trip, and no check: writes through it are not refused for a
// closed period, and fail with table.ErrTableNotFound until the period's
// table exists (Prepare creates it).
func (r *Tables[T]) Table(at time.Time) *table.Table[T] {
	return r.named(r.Name(at))
}

func (r *Tables[T]) named(name string) *table.Table[T] {
	t, _ := table.New(table.NewClient(r.svc, name), &table.Options[T]{Keys: r.keyFn, CursorKey: r.cursorKey}) // T was checked by New
	return t
}

// PeriodTable is one period's table.
type PeriodTable struct {
	Name  string
	Start time.Time // the period's start, in UTC
}

// Periods returns the periods whose tables exist, oldest first: one list
// request per 1,000 tables of the account whose names start with the
// prefix. Names that start with the prefix but do not end in a period's
// start (other tables) are skipped. A table being deleted may still be
// listed by the service for a while.
func (r *Tables[T]) Periods(ctx context.Context) (_ []PeriodTable, err error) {
	ctx, sp := r.obs.Start(ctx, opPeriods, "", "")
	defer func() { sp.End(err) }()
	var out []PeriodTable
	for name, err := range table.ListTables(ctx, r.svc, r.prefix) {
		if err != nil {
			return out, err
		}
		if start, ok := r.parse(name); ok {
			out = append(out, PeriodTable{Name: name, Start: start})
		}
	}
	return out, nil // in name order, which is time order (fixed-width digits)
}

// parse returns the period start a table name stands for, if it is one of
// this rotation's.
func (r *Tables[T]) parse(name string) (time.Time, bool) {
	if len(name) != len(r.prefix)+r.digits || name[:len(r.prefix)] != r.prefix {
		return time.Time{}, false
	}
	label := name[len(r.prefix):]
	t, err := time.ParseInLocation(r.period.Layout, label, time.UTC)
	if err != nil || !digitsOnly(label) || !r.period.Start(t).Equal(t) || t.Format(r.period.Layout) != label {
		return time.Time{}, false
	}
	return t, true
}

// closed reports whether the period starting at start takes no more
// writes: it ended more than Grace ago.
func (r *Tables[T]) closed(start time.Time) bool {
	return start.Before(r.period.Start(r.now().Add(-r.grace)))
}

func (r *Tables[T]) checkOpen(op string, at time.Time) error {
	if start := r.period.Start(at); r.closed(start) {
		return fmt.Errorf("%w: %s at %v: its period (table %s) ended more than %v ago", ErrExpired, op, at, r.Name(at), r.grace)
	}
	return nil
}

// beingDeleted reports a 409 TableBeingDeleted.
func beingDeleted(err error) bool {
	var re *azcore.ResponseError
	var te *table.Error
	return (errors.As(err, &re) && re.ErrorCode == "TableBeingDeleted") || (errors.As(err, &te) && te.Code == "TableBeingDeleted")
}

// expired wraps an answer that says the period's table is being deleted.
func expired(op, name string, err error) error {
	return fmt.Errorf("%w: %s: table %s is being deleted: %w", ErrExpired, op, name, err)
}

// create creates table name if it does not exist: one round trip. A table
// being deleted is not waited for (unlike table.CreateTable): it is a
// period that was swept.
func (r *Tables[T]) create(ctx context.Context, name string) error {
	_, err := r.svc.CreateTable(ctx, name, nil)
	err = redact.Error(err) // the SDK's error: its URL may carry a SAS
	var re *azcore.ResponseError
	switch {
	case err == nil, errors.As(err, &re) && re.ErrorCode == "TableAlreadyExists":
		// A lost response's resend answers TableAlreadyExists too: the
		// table exists either way.
		return nil
	case beingDeleted(err):
		return expired("create", name, err)
	}
	return &table.Error{Op: "create table", Table: name, Err: err}
}

// Prepare creates the table of the period containing at, if it does not
// exist: one round trip. Creating the next period's table ahead of time
// keeps the creation off the first write's path. ErrExpired for a closed
// period or a table being deleted.
func (r *Tables[T]) Prepare(ctx context.Context, at time.Time) (err error) {
	ctx, sp := r.obs.Start(ctx, opPrepare, r.Name(at), "")
	defer func() { sp.EndWrite(err, false) }()
	if err := r.checkOpen("prepare", at); err != nil {
		return err
	}
	return r.create(ctx, r.Name(at))
}

// Insert adds v to the table of the period containing at: one round trip
// when the table exists; on the first write of a period, 3 (the insert
// answers TableNotFound, the table is created, the insert is sent again).
// Its outcome is table.Table.Insert's (a lost response is settled by a
// read, never written twice; when every attempt's response was lost, one
// more read tells whether the table exists). ErrExpired, with nothing
// sent, when the period closed; ErrExpired when its table is being
// deleted.
func (r *Tables[T]) Insert(ctx context.Context, at time.Time, v T) (res table.Result, err error) {
	ctx, sp := r.obs.Start(ctx, opInsert, r.Name(at), r.partitionOf(&v))
	defer func() { sp.EndWrite(err, res.Verified) }()
	if err := r.checkOpen("insert", at); err != nil {
		return table.Result{}, err
	}
	name := r.Name(at)
	tb := r.named(name)
	res, err = tb.Insert(ctx, v)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, table.ErrInvalid):
		return res, invalid.Mark(ErrInvalid, err) // found before the network
	case beingDeleted(err):
		return res, expired("insert", name, err)
	case !errors.Is(err, table.ErrTableNotFound) && !(errors.Is(err, table.ErrOutcomeUnknown) && r.missing(ctx, tb, v)):
		return res, err
	}
	// The period's table does not exist, so the insert was not applied:
	// even when an attempt's response was lost (the outcome is marked
	// unknown), that attempt found no table either, since tables of open
	// periods are never deleted (Sweep takes closed ones only). Create it,
	// unless the period closed meanwhile: the table of a closed period is
	// never created again (it may just have been swept, perhaps after a
	// lost attempt was applied: then the outcome stays unknown).
	if cerr := r.checkOpen("insert", at); cerr != nil {
		if errors.Is(err, table.ErrOutcomeUnknown) {
			return table.Result{}, fmt.Errorf("%w: %w", cerr, err)
		}
		return table.Result{}, cerr
	}
	cerr := r.create(ctx, name)
	if errors.Is(cerr, ErrExpired) {
		return table.Result{}, cerr
	}
	// Even if the create failed, the insert's answer settles whether the
	// table exists now (a create whose response was lost may have worked).
	first := err
	res, err = tb.Insert(ctx, v)
	switch {
	case err == nil:
		return res, nil
	case beingDeleted(err):
		return res, expired("insert", name, err)
	case errors.Is(err, table.ErrAlreadyExists) && errors.Is(first, table.ErrOutcomeUnknown):
		// A late attempt of the first insert may have landed in the new
		// table: not a conflict, an unknown outcome.
		return res, first
	case cerr != nil && errors.Is(err, table.ErrTableNotFound) && !errors.Is(err, table.ErrOutcomeUnknown):
		return res, fmt.Errorf("%w (creating the table: %v)", err, cerr)
	}
	return res, err
}

// missing reports whether a read of v's keys finds no table: after every
// attempt of an insert lost its response and the table's own read could
// not settle it.
func (r *Tables[T]) missing(ctx context.Context, tb *table.Table[T], v T) bool {
	pk, rk, err := fieldmodel.TableKeys(tb, &v)
	if err != nil || ctx.Err() != nil {
		return false
	}
	_, err = tb.Get(ctx, pk, rk, nil)
	return errors.Is(err, table.ErrTableNotFound)
}

// Submit sends ops (built with any table.Table[T]'s InsertOp, UpsertOp,
// ...) to the table of the period containing at, as [table.Table.Submit]
// does, after creating the table if it does not exist: 1 round trip for
// the create (which answers TableAlreadyExists when the table exists),
// then Submit's, one per transaction. ErrInvalid, with nothing sent, when
// an op carries an error ([table.Op.Err]: its keys are invalid, also
// [table.ErrInvalidKey], or its value could not be encoded); ErrExpired,
// with nothing sent, when the period closed; ErrExpired, with no op sent,
// when the create finds its table being deleted. When the create fails
// otherwise no op is sent either, and the result has no op results.
func (r *Tables[T]) Submit(ctx context.Context, at time.Time, ops []table.Op, opts *table.BatchOptions) (res table.BatchResult, err error) {
	ctx, sp := r.obs.Start(ctx, opSubmit, r.Name(at), "")
	defer func() { sp.EndWrite(err, res.Verified) }()
	for i, op := range ops {
		if err := op.Err(); err != nil {
			return table.BatchResult{}, fmt.Errorf("rotation: submit: op %d: %w", i, invalid.Mark(ErrInvalid, err))
		}
	}
	if err := r.Prepare(ctx, at); err != nil {
		return table.BatchResult{}, err
	}
	name := r.Name(at)
	res, err = r.named(name).Submit(ctx, ops, opts)
	if beingDeleted(err) {
		err = expired("submit", name, err)
	}
	return res, err
}

// RangeOptions configures Range and RangePage. A nil *RangeOptions
// means defaults.
type RangeOptions struct {
	// Filter selects entities inside each period (periods are selected
	// whole by the time range), as [table.Query] Filter does. A filter the
	// table package refuses is ErrInvalid. Default (empty): every entity.
	Filter table.Filter
	// Select limits the properties read (server-side projection), as
	// [table.Query] Select does. Default (nil): every property.
	Select []string
	// PageSize is the most entities RangePage returns (but for entities
	// of the same keys in several periods, which a page never splits), and
	// the most Range reads from each period per round trip: 1 to
	// table.MaxPageSize (1,000). Default (0): 1,000. Negative or larger is
	// ErrInvalid, nothing sent.
	PageSize int
}

// Range yields the entities that opts select from the tables of every
// period that overlaps [from, to), as one table holding them all would
// return them: in PartitionKey, RowKey order, entities with the same keys
// in period order, each as a [table.Entity] (its keys and the ETag read,
// for changes through Table(at)). Periods are selected whole (opts.Filter
// selects inside them); a period's table is found by listing (Periods:
// one request per 1,000 tables), then each is queried, Concurrency at a
// time, one round trip per page (opts.PageSize entities, 1,000 by
// default), merged lazily by a merge of the periods' queries. Each period's query
// holds a page or two in memory until the merge passes it; breaking out
// of the loop stops every query. A nil opts means defaults.
//
// A period deleted while Range reads it ends the sequence with
// table.ErrTableNotFound.
func (r *Tables[T]) Range(ctx context.Context, from, to time.Time, opts *RangeOptions) iter.Seq2[table.Entity[T], error] {
	return obs.Seq2(r.obs, ctx, opRange, "", "", func(ctx context.Context) iter.Seq2[table.Entity[T], error] {
		return r.rangeOf(ctx, from, to, opts)
	})
}

// rangeOf is Range, without its span.
func (r *Tables[T]) rangeOf(ctx context.Context, from, to time.Time, opts *RangeOptions) iter.Seq2[table.Entity[T], error] {
	return func(yield func(table.Entity[T], error) bool) {
		if opts == nil {
			opts = &RangeOptions{}
		}
		if !from.Before(to) {
			yield(table.Entity[T]{}, fmt.Errorf("%w: from %v is not before to %v", ErrInvalid, from, to))
			return
		}
		n, err := keycursor.PageSize(ErrInvalid, opts.PageSize)
		if err != nil {
			yield(table.Entity[T]{}, err)
			return
		}
		srcs, err := r.sources(ctx, from, to, opts)
		if err != nil {
			yield(table.Entity[T]{}, err)
			return
		}
		for _, s := range srcs {
			s.Query.PageSize = n
		}
		for e, err := range keycursor.FanOut(ctx, srcs, &table.FanOutOptions{Ordered: true, Concurrency: r.conc}) {
			if !yield(e, invalid.Mark(ErrInvalid, err)) || err != nil {
				return
			}
		}
	}
}

// sources lists the periods and returns the query opts makes of each
// period that overlaps [from, to).
func (r *Tables[T]) sources(ctx context.Context, from, to time.Time, opts *RangeOptions) ([]keycursor.Source[T], error) {
	periods, err := r.Periods(ctx)
	if err != nil {
		return nil, err
	}
	first := r.period.Start(from)
	var srcs []keycursor.Source[T]
	for _, p := range periods {
		if !p.Start.Before(first) && p.Start.Before(to) {
			srcs = append(srcs, keycursor.Source[T]{Table: r.named(p.Name), Query: &table.Query{Filter: opts.Filter, Select: opts.Select}})
		}
	}
	return srcs, nil
}

// RangePage returns one page of Range: the next opts.PageSize entities
// that opts select from the periods overlapping [from, to), in
// PartitionKey, RowKey order (entities with the same keys in period
// order, never split between pages, so a page may hold a few more), after
// cursor ("" for the first page), and the cursor of the page after it
// (Next, empty at the end). The cursor is a [table.Cursor]: a string to
// keep anywhere and resume from in another process, with the same from,
// to, Filter and Select (another range's is ErrInvalid); plain, it shows
// the last entity's keys, sealed with Options.CursorKey nothing (see the
// package documentation, "Trust"); periods created or swept between pages
// are read as they are then. 1 listing of the periods + 1 round trip per
// period (Concurrency at a time) when the service returns full pages; a
// page of 1,000 may be followed by an empty one. A nil opts means
// defaults.
func (r *Tables[T]) RangePage(ctx context.Context, from, to time.Time, cursor table.Cursor, opts *RangeOptions) (_ table.Page[table.Entity[T]], err error) {
	ctx, sp := r.obs.Start(ctx, opRangePage, "", "")
	defer func() { sp.End(err) }()
	if opts == nil {
		opts = &RangeOptions{}
	}
	if !from.Before(to) {
		return table.Page[table.Entity[T]]{}, fmt.Errorf("%w: from %v is not before to %v", ErrInvalid, from, to)
	}
	m := keycursor.Merged[T]{
		Listing:     keycursor.New(r.cursorKey, r.prefix, "rotation", from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), opts.Filter.String(), strings.Join(opts.Select, ",")),
		Concurrency: r.conc,
		Invalid:     ErrInvalid,
		Sources: func(ctx context.Context) ([]keycursor.Source[T], error) {
			return r.sources(ctx, from, to, opts)
		},
	}
	return m.Page(ctx, cursor, opts.PageSize)
}

// Swept is the result of Sweep: the periods whose tables are gone.
type Swept struct {
	// Deleted are the tables this Sweep's requests deleted.
	Deleted []PeriodTable
	// Gone are the tables that were already being deleted (409
	// TableBeingDeleted) or gone (404) when this Sweep came to them:
	// another Sweep's work, or this one's when its request's responses
	// were lost and a resend or a query (table.DeleteTable) found the
	// table gone. Their entities are deleted either way.
	Gone []PeriodTable
}

// SweepOptions configures Sweep.
type SweepOptions struct {
	// Before is how far back Sweep deletes: the tables of every period
	// that ended at or before it. It must be at least Grace and
	// MaxClockSkew in the past. Required: a rotation has no retention of
	// its own, so a zero Before (or a nil *SweepOptions) is ErrInvalid,
	// nothing sent, rather than a default that deletes data.
	Before time.Time
}

// Sweep deletes the tables of every period that ended at or before
// opts.Before (each period entirely older than it): one request per
// table, after one list request per 1,000 tables (Periods). It is the
// guide's high-volume delete: a period of any size goes in one request,
// and nothing is read.
//
// opts.Before is required and must be at least Grace and MaxClockSkew in
// the past (ErrInvalid otherwise, with nothing sent), so that only closed
// periods are deleted and no writer creates their tables again. A table
// already being deleted (409 TableBeingDeleted) or gone (404) is reported
// in Swept.Gone, not as an error; so is one whose responses were all lost
// and that a query then finds gone (table.DeleteTable settles it). On any
// other failure Sweep stops and returns what it did with the error;
// running it again continues.
func (r *Tables[T]) Sweep(ctx context.Context, opts *SweepOptions) (out Swept, err error) {
	ctx, sp := r.obs.Start(ctx, opSweep, "", "")
	defer func() { sp.EndWrite(err, false) }()
	if opts == nil || opts.Before.IsZero() {
		return out, fmt.Errorf("%w: Sweep needs SweepOptions.Before (how far back to delete)", ErrInvalid)
	}
	before := opts.Before
	if latest := r.now().Add(-r.grace - MaxClockSkew); before.After(latest) {
		return out, fmt.Errorf("%w: Sweep before %v: periods ending after %v (now less Grace %v and MaxClockSkew %v) may still be written", ErrInvalid, before, latest, r.grace, MaxClockSkew)
	}
	periods, err := r.Periods(ctx)
	if err != nil {
		return out, err
	}
	cutoff := r.period.Start(before)
	for _, p := range periods {
		if !p.Start.Before(cutoff) {
			break // oldest first
		}
		err := table.DeleteTable(ctx, r.svc, p.Name)
		switch {
		case err == nil:
			out.Deleted = append(out.Deleted, p)
		case errors.Is(err, table.ErrTableNotFound), beingDeleted(err):
			out.Gone = append(out.Gone, p)
		default:
			return out, err
		}
	}
	return out, nil
}

// The operations of this package, for telemetry.
var (
	opPrepare   = obs.Write("rotation.Prepare")
	opInsert    = obs.Write("rotation.Insert")
	opSubmit    = obs.Write("rotation.Submit")
	opSweep     = obs.Write("rotation.Sweep")
	opPeriods   = obs.Read("rotation.Periods")
	opRange     = obs.Read("rotation.Range")
	opRangePage = obs.Read("rotation.RangePage")
)

// partitionOf is v's PartitionKey, for a span ("" when T cannot give it).
func (r *Tables[T]) partitionOf(v *T) string {
	if r.keyFn != nil {
		pk, _ := r.keyFn(v)
		return pk
	}
	pk, _, _ := fieldmodel.KeysOf(v)
	return pk
}
