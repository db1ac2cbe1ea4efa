package dataseries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// ErrInvalid is the sentinel for a request rejected before the network: a
// slot the series does not have, too many slots, bad slot names, a SetAll
// without an ETag (also [table.ErrNoETag]), invalid keys (also
// [table.ErrInvalidKey]). It also matches [table.ErrInvalid].
var ErrInvalid = invalid.New("dataseries: invalid request")

// Value is the type of a series' slots: whole numbers (Edm.Int64) or
// doubles (Edm.Double).
type Value interface{ ~int64 | ~float64 }

// Options configures a Series. A nil *Options means defaults.
type Options struct {
	// Retry is the policy for Add's read-modify-write when another writer
	// changed the series in between. Default: retry.Default.
	Retry *retry.Policy
	// Telemetry receives the spans, metrics and log records of the
	// Series' operations. Default (nil): the global OpenTelemetry
	// providers and slog.Default().
	Telemetry *table.Telemetry
}

// Hours returns the slot names H00 to H23: the guide's hourly counts.
func Hours() []string {
	out := make([]string, 24)
	for h := range out {
		out[h] = fmt.Sprintf("H%02d", h)
	}
	return out
}

// Series is the guide's data series pattern over a table: a fixed set of
// named slots stored as the properties of one entity, so that the whole
// series is one point query and one slot one merge. It is safe for
// concurrent use.
type Series[V Value] struct {
	tbl   *table.Table[table.Dynamic]
	slots []string
	has   map[string]bool
	retry *retry.Policy
	obs   *obs.Obs
}

// New returns a Series of the named slots (the entity's properties: the
// guide's 24 hourly counts are [Hours]) over tbl. The slots are required:
// valid property names ([fieldmodel.ValidName]), 1 to the properties
// of one entity less the one tablekit keeps for its write history
// ([reserved.WriteProperty]): 251 under the table's [table.Profile] (both
// services'). opts may be nil (defaults). The series' rows are of its own making (a
// property per slot), so it takes a [table.Table] of [table.Dynamic] and
// the slots' type V explicitly.
func New[V Value](tbl *table.Table[table.Dynamic], slots []string, opts *Options) (*Series[V], error) {
	if tbl == nil || len(slots) == 0 {
		return nil, fmt.Errorf("%w: a table and at least one slot are required", ErrInvalid)
	}
	if most := tbl.Profile().MaxProperties - 1; len(slots) > most {
		return nil, fmt.Errorf("%w: %d slots, more than one entity holds (%d); a longer series needs several entities (the wide entity pattern)", ErrInvalid, len(slots), most)
	}
	s := &Series[V]{tbl: tbl, slots: slices.Clone(slots), has: map[string]bool{}}
	if opts != nil {
		s.retry = opts.Retry
		s.obs = obs.New((*obs.Config)(opts.Telemetry))
	}
	for _, name := range s.slots {
		if err := fieldmodel.ValidName(name); err != nil {
			return nil, fmt.Errorf("%w: slot name %q: %w", ErrInvalid, name, err)
		}
		if s.has[name] {
			return nil, fmt.Errorf("%w: slot %q named twice", ErrInvalid, name)
		}
		s.has[name] = true
	}
	return s, nil
}

// Get reads the whole series: one point query. The result is the series'
// envelope: its keys, its ETag and every slot's value in Value (zero when
// never set). A series never written reads as all zeros with an empty
// ETag (it is never ErrNotFound: Set and Add create it).
func (s *Series[V]) Get(ctx context.Context, partitionKey, rowKey string) (_ table.Entity[map[string]V], err error) {
	ctx, sp := s.obs.Start(ctx, opGet, s.tbl.Name(), partitionKey)
	defer func() { sp.End(err) }()
	out := table.Entity[map[string]V]{PartitionKey: partitionKey, RowKey: rowKey, Value: s.zeros()}
	d, err := s.tbl.Get(ctx, partitionKey, rowKey, &table.GetOptions{Select: s.slots})
	if errors.Is(err, table.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return table.Entity[map[string]V]{}, refusal(err)
	}
	out.ETag = d.ETag
	for _, name := range s.slots {
		v, err := valueOf[V](d.Value.Properties[name])
		if err != nil {
			return table.Entity[map[string]V]{}, fmt.Errorf("dataseries: slot %s of (%q, %q): %w", name, partitionKey, rowKey, err)
		}
		out.Value[name] = v
	}
	return out, nil
}

func (s *Series[V]) zeros() map[string]V {
	m := make(map[string]V, len(s.slots))
	for _, name := range s.slots {
		m[name] = 0
	}
	return m
}

// valueOf converts a stored property to V. A whole-number double comes back
// from the service without its annotation, so any number is accepted, but
// a whole-number series refuses a stored double it cannot hold exactly.
func valueOf[V Value](p any) (V, error) {
	switch x := p.(type) {
	case nil:
		return 0, nil
	case int32:
		return V(x), nil
	case int64:
		return V(x), nil
	case float64:
		if !isFloat[V]() && (x != math.Trunc(x) || x < math.MinInt64 || x >= math.MaxInt64) {
			return 0, fmt.Errorf("stored value %v is not a whole number an int64 series can hold", x)
		}
		return V(x), nil
	}
	return 0, fmt.Errorf("stored value %v (%T) is not a number", p, p)
}

// isFloat reports whether V is a floating-point type.
func isFloat[V Value]() bool {
	half := V(1)
	half /= 2
	return half != 0
}

// Set stores v in one slot, creating the series if needed: one merge (an
// upsert of that property alone), one round trip. Other slots keep their
// values; concurrent Sets of different slots never overwrite each other.
func (s *Series[V]) Set(ctx context.Context, partitionKey, rowKey, slot string, v V) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opSet, s.tbl.Name(), partitionKey)
	defer func() { sp.EndWrite(err, res.Verified) }()
	d, err := s.setRow(partitionKey, rowKey, slot, v)
	if err != nil {
		return table.Result{}, err
	}
	res, err = s.tbl.Upsert(ctx, d, table.Fields(slot))
	return res, refusal(err)
}

// SetOps is Set as a [table.Change], to join a composed write (see
// "Composing patterns" in package table): the merge of one slot, which
// creates the series if needed. Nothing is sent (ctx is for the shape
// every ...Ops shares). A slot the series does not have, or invalid keys,
// are ErrInvalid.
func (s *Series[V]) SetOps(ctx context.Context, partitionKey, rowKey, slot string, v V) (table.Change, error) {
	d, err := s.setRow(partitionKey, rowKey, slot, v)
	if err != nil {
		return table.Change{}, err
	}
	return s.change(s.tbl.UpsertOp(d, table.Fields(slot)))
}

// setRow is the row of a Set: slot alone.
func (s *Series[V]) setRow(pk, rk, slot string, v V) (table.Dynamic, error) {
	if !s.has[slot] {
		return table.Dynamic{}, fmt.Errorf("%w: no slot %q", ErrInvalid, slot)
	}
	return table.Dynamic{PartitionKey: pk, RowKey: rk, Properties: map[string]any{slot: store(v)}}, nil
}

// SetAll replaces every slot at once (slots missing from values become
// zero): one round trip. etag is the ETag of a Get: the replace happens
// only if nobody wrote the series since (ErrPreconditionFailed otherwise,
// ErrNotFound if it was never written or was deleted); azcore.ETagAny
// replaces whatever is there, creating the series if needed (an upsert),
// and is the only way to write a series that has no ETag yet. An empty
// etag is ErrInvalid and [table.ErrNoETag], nothing sent. A replace starts
// the entity's write history afresh, so an Add whose response was lost
// just before it may end in ErrOutcomeUnknown instead of being settled
// (it is never applied twice).
func (s *Series[V]) SetAll(ctx context.Context, partitionKey, rowKey string, values map[string]V, etag azcore.ETag) (res table.Result, err error) {
	ctx, sp := s.obs.Start(ctx, opSetAll, s.tbl.Name(), partitionKey)
	defer func() { sp.EndWrite(err, res.Verified) }()
	d, err := s.setAllRow(partitionKey, rowKey, values, etag)
	if err != nil {
		return table.Result{}, err
	}
	if etag == azcore.ETagAny {
		res, err = s.tbl.Upsert(ctx, d, table.Replace)
	} else {
		res, err = s.tbl.Update(ctx, d, etag, table.Replace)
	}
	return res, refusal(err)
}

// SetAllOps is SetAll as a [table.Change] (see SetOps): the replace of
// the whole series conditioned on etag, or its upsert with
// azcore.ETagAny. Nothing is sent. An empty etag is ErrInvalid and
// [table.ErrNoETag].
func (s *Series[V]) SetAllOps(ctx context.Context, partitionKey, rowKey string, values map[string]V, etag azcore.ETag) (table.Change, error) {
	d, err := s.setAllRow(partitionKey, rowKey, values, etag)
	if err != nil {
		return table.Change{}, err
	}
	if etag == azcore.ETagAny {
		return s.change(s.tbl.UpsertOp(d, table.Replace))
	}
	return s.change(s.tbl.UpdateOp(d, etag, table.Replace))
}

// setAllRow is the row of a SetAll: every slot.
func (s *Series[V]) setAllRow(pk, rk string, values map[string]V, etag azcore.ETag) (table.Dynamic, error) {
	for name := range values {
		if !s.has[name] {
			return table.Dynamic{}, fmt.Errorf("%w: no slot %q", ErrInvalid, name)
		}
	}
	if etag == "" {
		return table.Dynamic{}, fmt.Errorf("%w: SetAll: %w", ErrInvalid, table.ErrNoETag)
	}
	props := map[string]any{}
	for _, name := range s.slots {
		props[name] = store(values[name])
	}
	return table.Dynamic{PartitionKey: pk, RowKey: rk, Properties: props}, nil
}

// Delete removes the whole series (its one entity) if its ETag is etag
// (that of a Get; ErrPreconditionFailed otherwise), or whatever version is
// stored with azcore.ETagAny: one round trip. [table.ErrNotFound] when it
// was never written or is already deleted (a Get then reads all zeros).
// An empty etag is ErrInvalid and [table.ErrNoETag], nothing sent. As with
// table.Delete, a delete whose response was lost leaves nothing to read:
// its error is then [table.ErrOutcomeUnknown], which also matches
// ErrNotFound.
func (s *Series[V]) Delete(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) (err error) {
	ctx, sp := s.obs.Start(ctx, opDelete, s.tbl.Name(), partitionKey)
	defer func() { sp.EndWrite(err, false) }()
	if etag == "" {
		return fmt.Errorf("%w: Delete: %w", ErrInvalid, table.ErrNoETag)
	}
	return refusal(s.tbl.Delete(ctx, partitionKey, rowKey, etag))
}

// DeleteOps is Delete as a [table.Change] (see SetOps): the delete of the
// series conditioned on etag (azcore.ETagAny: any version). Nothing is
// sent. An empty etag is ErrInvalid and [table.ErrNoETag].
func (s *Series[V]) DeleteOps(ctx context.Context, partitionKey, rowKey string, etag azcore.ETag) (table.Change, error) {
	if etag == "" {
		return table.Change{}, fmt.Errorf("%w: DeleteOps: %w", ErrInvalid, table.ErrNoETag)
	}
	return s.change(s.tbl.DeleteOp(partitionKey, rowKey, etag))
}

// change is a Change of ops, the series' writes (one entity), or the
// error of the first that has one (keys, limits: found before the
// network) as ErrInvalid.
func (s *Series[V]) change(ops ...table.Op) (table.Change, error) {
	for _, op := range ops {
		if err := op.Err(); err != nil {
			return table.Change{}, refusal(err)
		}
	}
	return table.Change{By: "dataseries " + s.tbl.Name(), Ops: ops}, nil
}

// Add adds delta to one slot and returns the slot's new value in the
// envelope of the series, with the write's ETag (as Modify returns the
// entity as written): a read-modify-write ([table.Table.Modify]:
// a read, then a merge of that slot conditioned on the ETag read; two
// round trips, two more per conflict) that loses no concurrent update and,
// when a response is lost, never adds twice (it returns
// table.ErrOutcomeUnknown when that cannot be settled). A series never
// written is first created empty (two more round trips). Under heavy
// contention with lost responses, more than reserved.HistoryLength writes may
// come between a lost write and its verifying read: that Add then reports
// ErrOutcomeUnknown rather than guess.
func (s *Series[V]) Add(ctx context.Context, partitionKey, rowKey, slot string, delta V) (out table.Entity[V], err error) {
	ctx, sp := s.obs.Start(ctx, opAdd, s.tbl.Name(), partitionKey)
	defer func() { sp.EndWrite(err, false) }() // a lost response verified shows on table.Modify's span
	if !s.has[slot] {
		return table.Entity[V]{}, fmt.Errorf("%w: no slot %q", ErrInvalid, slot)
	}
	for created := false; ; created = true {
		var newV V
		var refused error // fn's own error, which ends Modify
		e, err := s.tbl.Modify(ctx, partitionKey, rowKey, func(d *table.Dynamic) error {
			newV, refused = added(d, slot, delta)
			if refused != nil {
				return refused
			}
			d.Properties = map[string]any{slot: store(newV)}
			return nil
		}, &table.ModifyOptions{Mode: table.Fields(slot), Retry: s.retry})
		switch {
		case err == nil:
			return table.Entity[V]{PartitionKey: partitionKey, RowKey: rowKey, ETag: e.ETag, Value: newV}, nil
		case refused != nil && errors.Is(err, refused):
			return table.Entity[V]{}, refused
		}
		if !errors.Is(err, table.ErrNotFound) || created {
			return table.Entity[V]{}, refusal(err)
		}
		// The first write of the series: create it empty, then add. The
		// insert starts the entity's write history, which settles later
		// lost responses exactly. A concurrent first writer may have
		// created it (ErrAlreadyExists), or this insert's outcome may be
		// unknown: either way the series exists now or the next Modify
		// says otherwise.
		_, err = s.tbl.Insert(ctx, table.Dynamic{PartitionKey: partitionKey, RowKey: rowKey})
		if err != nil && !errors.Is(err, table.ErrAlreadyExists) && !errors.Is(err, table.ErrOutcomeUnknown) {
			return table.Entity[V]{}, err
		}
	}
}

// AddOps is Add as a [table.Change] (see SetOps): it reads the series (1
// round trip) and returns the merge of the slot's new value (the value
// read plus delta) conditioned on the ETag read, or, for a series never
// written, its insert holding delta in that slot. Applied later, a write
// of the series in between fails the transaction
// ([table.ErrPreconditionFailed], or [table.ErrAlreadyExists] when another
// writer created it): make the change again. A lost response is settled
// as for any conditional write (never applied twice). A slot the series
// does not have is ErrInvalid, nothing sent; a stored value the series
// cannot hold, or a sum that overflows int64 (also ErrInvalid), is an
// error after the read.
func (s *Series[V]) AddOps(ctx context.Context, partitionKey, rowKey, slot string, delta V) (_ table.Change, err error) {
	ctx, sp := s.obs.Start(ctx, opAddOps, s.tbl.Name(), partitionKey)
	defer func() { sp.End(err) }()
	if !s.has[slot] {
		return table.Change{}, fmt.Errorf("%w: no slot %q", ErrInvalid, slot)
	}
	got, err := s.tbl.Get(ctx, partitionKey, rowKey, nil)
	if errors.Is(err, table.ErrNotFound) {
		return s.change(s.tbl.InsertOp(table.Dynamic{PartitionKey: partitionKey, RowKey: rowKey, Properties: map[string]any{slot: store(delta)}}))
	}
	if err != nil {
		return table.Change{}, refusal(err)
	}
	d := got.Value // with its Meta: the version read, whose write history settles a lost response
	v, err := added(&d, slot, delta)
	if err != nil {
		return table.Change{}, err
	}
	d.Properties = map[string]any{slot: store(v)}
	return s.change(s.tbl.UpdateOp(d, d.ETag, table.Fields(slot)))
}

// added returns the value of slot in d plus delta, or why it cannot be
// added: a stored value the series cannot hold, an int64 overflow.
func added[V Value](d *table.Dynamic, slot string, delta V) (V, error) {
	cur, err := valueOf[V](d.Properties[slot])
	if err != nil {
		return 0, fmt.Errorf("dataseries: slot %s of (%q, %q): %w", slot, d.PartitionKey, d.RowKey, err)
	}
	v := cur + delta
	if !isFloat[V]() && (delta > 0 && v < cur || delta < 0 && v > cur) {
		return 0, fmt.Errorf("%w: adding %v to %v overflows int64", ErrInvalid, delta, cur)
	}
	return v, nil
}

// refusal is err, the core's error of a request to the series, as this
// package's: a validation error (found before the network: keys, limits)
// also matches ErrInvalid and names this package; others are as they are.
func refusal(err error) error {
	if err == nil || !errors.Is(err, table.ErrInvalid) || errors.Is(err, ErrInvalid) {
		return err
	}
	return fmt.Errorf("dataseries: %w", invalid.Mark(ErrInvalid, err))
}

// store is the property value of v: int64 for whole-number series,
// float64 for doubles (also for named types over them).
func store[V Value](v V) any {
	if isFloat[V]() {
		return float64(v)
	}
	return int64(v)
}

// The operations of this package, for telemetry.
var (
	opSet    = obs.Write("dataseries.Set")
	opSetAll = obs.Write("dataseries.SetAll")
	opAdd    = obs.Write("dataseries.Add")
	opDelete = obs.Write("dataseries.Delete")
	opGet    = obs.Read("dataseries.Get")
	opAddOps = obs.Read("dataseries.AddOps") // a read; the change is sent by Apply
)
