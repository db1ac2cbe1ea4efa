package secondaryindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
)

// CopyRef names one index copy.
type CopyRef struct {
	Index, PartitionKey, RowKey string
}

// Drift is what Check found (and Rebuild fixed) in the indexes.
type Drift struct {
	// Entities is how many primaries were checked.
	Entities int
	// Missing are copies an entity calls for that do not exist; Stale,
	// copies that exist with other content; Orphans, copies no entity
	// calls for.
	Missing, Stale, Orphans []CopyRef
	// Fixed counts the copies Rebuild wrote or deleted (0 for Check).
	// Fixes that lost a race with a concurrent writer are not counted:
	// that writer's own transaction or intent keeps the index.
	Fixed int
	// Unreadable are the primaries that could not be decoded or opened
	// (Options.Sealer), as (Index "", PartitionKey, RowKey = the id): a row
	// another writer planted, or one sealed with a key that cannot be had
	// now. They are skipped, not fatal: their copies are neither written
	// nor counted as orphans (so Rebuild never deletes them), and the rest
	// of the partition is checked and repaired.
	Unreadable []CopyRef
}

// Clean reports whether no drift was found.
func (d Drift) Clean() bool { return len(d.Missing)+len(d.Stale)+len(d.Orphans) == 0 }

// Check compares every index with the entities of partition pk (every
// partition when pk is ""), without changing anything: a range query per
// page of primaries and per page of each index's copies (a table scan when
// pk is "" or for an organisation-wide index partition). An OtherPartition
// index may show drift that its pending intents will fix: Drain its
// worker first for an exact answer. A copy its index could not have
// written (see ErrCorrupt) is an orphan; when two entities have the value
// of a unique index, the one without its copy is Missing.
func (s *Store[T]) Check(ctx context.Context, pk string) (_ Drift, err error) {
	ctx, sp := s.obs.Start(ctx, opCheck, s.tbl.Name(), pk)
	defer func() { sp.End(err) }()
	d, _, err := s.drift(ctx, pk)
	return d, err
}

// Rebuild makes every index match the entities of partition pk (every
// partition when pk is ""): adding an index to existing data, or repairing
// drift. It writes the missing and stale copies (for SamePartition
// indexes in one transaction per entity, conditioned on the entity's ETag
// so a concurrent write is never undone; for OtherPartition indexes by
// reconciling each entity as its worker does) and deletes the orphans
// (conditioned on their ETags). It returns the drift it found, with the
// number of copies fixed, and, after every other fix, an ErrDuplicate for
// each entity that has a unique value whose copy another entity holds
// (its copy is not written: change one of the values).
func (s *Store[T]) Rebuild(ctx context.Context, pk string) (_ Drift, err error) {
	ctx, sp := s.obs.Start(ctx, opRebuild, s.tbl.Name(), pk)
	defer func() { sp.EndWrite(err, false) }()
	d, plan, err := s.drift(ctx, pk)
	if err != nil || d.Clean() {
		return d, err
	}
	var ops []table.Op
	count := []int{} // per op: copies it fixes
	for _, f := range plan.same {
		group := []table.Op{s.tbl.UpdateOp(table.Dynamic{PartitionKey: f.pk, RowKey: s.primaryKey(f.id), Properties: map[string]any{}}, f.etag, table.Merge)}
		for _, r := range f.rows {
			group = append(group, s.tbl.UpsertOp(table.Dynamic{PartitionKey: r.pk, RowKey: r.rk, Properties: r.props}, table.Replace))
		}
		ops = append(ops, table.Atomic(group...)...)
		count = append(count, 0)
		for range f.rows {
			count = append(count, 1)
		}
	}
	var inter []orphan[T]
	for _, o := range plan.orphans {
		if o.ix.Where == OtherPartition || s.copyTable(o.ix) != s.tbl {
			inter = append(inter, o)
			continue
		}
		ops = append(ops, s.tbl.DeleteOp(o.d.PartitionKey, o.d.RowKey, o.d.ETag))
		count = append(count, 1)
	}
	res, err := s.tbl.Submit(ctx, ops, &table.BatchOptions{ContinueOnError: true})
	for i, r := range res.Ops {
		if r.Applied {
			d.Fixed += count[i]
		}
	}
	if err != nil && !errors.Is(err, table.ErrPreconditionFailed) && !errors.Is(err, table.ErrNotFound) {
		return d, err
	}
	for _, f := range plan.other {
		in := eventual.Intent[intent]{Payload: intent{PK: f.pk, ID: f.id}}
		if err := s.reconcile(ctx, in); err != nil {
			return d, err
		}
		d.Fixed += len(f.rows)
	}
	for _, o := range inter {
		err := s.copyTable(o.ix).Delete(ctx, o.d.PartitionKey, o.d.RowKey, o.d.ETag)
		switch {
		case err == nil:
			d.Fixed++
		case !errors.Is(err, table.ErrPreconditionFailed) && !errors.Is(err, table.ErrNotFound):
			return d, err
		}
	}
	switch len(plan.dups) {
	case 0:
		return d, nil
	case 1:
		return d, plan.dups[0]
	}
	return d, fmt.Errorf("%w (and %d more duplicate values)", plan.dups[0], len(plan.dups)-1)
}

// fix is the copies one entity needs written.
type fix struct {
	pk, id string
	etag   azcore.ETag
	rows   []row
}

// orphan is a copy no entity calls for.
type orphan[T any] struct {
	ix *Index[T]
	d  table.Dynamic
}

// repairPlan is what Rebuild writes: the SamePartition copies per entity,
// the entities to reconcile for OtherPartition copies, the orphans.
type repairPlan[T any] struct {
	same, other []fix
	orphans     []orphan[T]
	dups        []error // unique values two entities have: not fixed
}

// drift computes what Check reports and what Rebuild would write.
func (s *Store[T]) drift(ctx context.Context, pk string) (Drift, repairPlan[T], error) {
	var d Drift
	var plan repairPlan[T]
	type key struct{ table, pk, rk string }
	type want struct {
		ix *Index[T]
		r  row
		f  *fix
	}
	wanted := map[key][]want{}         // more than one: a unique value two entities have
	unreadable := map[[2]string]bool{} // (pk, id) of primaries that could not be read
	lo, hi := keys.PrefixRange(s.primary)
	var fixes []*fix
	for p, err := range s.tbl.Query(ctx, &table.Query{Filter: scoped(pk, lo, hi)}) {
		if err != nil {
			return d, plan, err
		}
		e, _, err := s.decode(ctx, p)
		var enc entry
		if err == nil {
			enc, err = s.encode(e.Value)
		}
		if err != nil {
			if ctx.Err() != nil {
				return d, plan, err
			}
			id := p.RowKey
			if parts, serr := keys.Split(p.RowKey); serr == nil && len(parts) == 2 {
				id = parts[1]
			}
			d.Unreadable = append(d.Unreadable, CopyRef{"", p.PartitionKey, id})
			unreadable[[2]string{p.PartitionKey, id}] = true
			continue
		}
		d.Entities++
		f := &fix{pk: e.PartitionKey, id: e.RowKey, etag: e.ETag}
		fixes = append(fixes, f)
		for name, r := range enc.copies {
			ix := s.byName[name]
			k := key{s.copyTable(ix).Name(), r.pk, r.rk}
			wanted[k] = append(wanted[k], want{ix, r, f})
		}
	}
	// The primaries come in key order from Table Storage, in none from
	// Cosmos DB: order each copy's wanters by their keys, so that the same
	// entity keeps a unique value two entities have (the first by key) on
	// both services.
	for _, ws := range wanted {
		slices.SortFunc(ws, func(a, b want) int {
			return cmp.Or(keys.Compare(a.f.pk, b.f.pk), keys.Compare(a.f.id, b.f.id))
		})
	}
	holder := map[key]int{} // the wanter whose copy exists
	otherFix := map[*fix]int{}
	for i := range s.indexes {
		ix := &s.indexes[i]
		t := s.copyTable(ix)
		cpk := pk
		if pk != "" {
			cpk = copyPartition(ix, pk)
		}
		ilo, ihi := keys.PrefixRange(ix.Name)
		for c, err := range t.Query(ctx, &table.Query{Filter: scoped(cpk, ilo, ihi)}) {
			if err != nil {
				return d, plan, err
			}
			// Another partition's copy in a shared index partition is
			// not pk's; a copy the index could not have written (refOf
			// fails) is an orphan wherever it is.
			if rpk, _, rerr := s.refOf(ix, c); pk != "" && rerr == nil && rpk != pk {
				continue
			}
			k := key{t.Name(), c.PartitionKey, c.RowKey}
			ws := wanted[k]
			ref := CopyRef{ix.Name, c.PartitionKey, c.RowKey}
			if rpk, rid, rerr := s.refOf(ix, c); rerr == nil && unreadable[[2]string{rpk, rid}] {
				continue // its primary's content is unknown: leave it
			}
			if len(ws) == 0 || ws[0].ix != ix {
				d.Orphans = append(d.Orphans, ref)
				plan.orphans = append(plan.orphans, orphan[T]{ix, c})
				continue
			}
			h := max(0, slices.IndexFunc(ws, func(w want) bool { return w.r.props[reserved.CopyRef] == c.Properties[reserved.CopyRef] }))
			holder[k] = h
			if w := ws[h]; !s.sameContent(w.r.props, c.Properties) {
				d.Stale = append(d.Stale, ref)
				s.addFix(&plan, otherFix, ix, w.f, w.r)
			}
		}
	}
	// A copy no entity has is written for the first that wants it; the
	// others wanting it have a unique value another entity has.
	for k, ws := range wanted {
		h, exists := holder[k]
		for i, w := range ws {
			switch {
			case exists && i == h:
				continue
			case !exists && i == 0:
				s.addFix(&plan, otherFix, w.ix, w.f, w.r)
			default:
				plan.dups = append(plan.dups, fmt.Errorf("%w: index %q: %q/%q has value row %q, which %q/%q holds", ErrDuplicate, w.ix.Name, w.f.pk, w.f.id, k.rk, ws[max(h, 0)].f.pk, ws[max(h, 0)].f.id))
			}
			d.Missing = append(d.Missing, CopyRef{w.ix.Name, k.pk, k.rk})
		}
	}
	for _, f := range fixes {
		if len(f.rows) > 0 {
			plan.same = append(plan.same, *f)
		}
	}
	// Reconciling an entity writes every copy it calls for, a unique value
	// another entity has among them: do it in key order, so that the first
	// entity by key keeps the value, whatever order the maps gave.
	slices.SortFunc(plan.other, func(a, b fix) int { return cmp.Or(keys.Compare(a.pk, b.pk), keys.Compare(a.id, b.id)) })
	sortRefs := func(rs []CopyRef) {
		slices.SortFunc(rs, func(a, b CopyRef) int { return compareRefs(a, b) })
	}
	sortRefs(d.Missing)
	sortRefs(d.Stale)
	sortRefs(d.Orphans)
	return d, plan, nil
}

func compareRefs(a, b CopyRef) int {
	for _, c := range [][2]string{{a.Index, b.Index}, {a.PartitionKey, b.PartitionKey}, {a.RowKey, b.RowKey}} {
		if c[0] != c[1] {
			return keys.Compare(c[0], c[1])
		}
	}
	return 0
}

// addFix records that copy r of entity f must be written; other maps
// the entities with OtherPartition fixes to their place in plan.other.
func (s *Store[T]) addFix(plan *repairPlan[T], other map[*fix]int, ix *Index[T], f *fix, r row) {
	if ix.Where == OtherPartition {
		i, ok := other[f]
		if !ok {
			i = len(plan.other)
			other[f] = i
			plan.other = append(plan.other, fix{pk: f.pk, id: f.id})
		}
		plan.other[i].rows = append(plan.other[i].rows, r)
		return
	}
	f.rows = append(f.rows, r)
}

// sameContent compares a wanted copy's properties with a stored copy's,
// both read through T so that stored types compare as written.
func (s *Store[T]) sameContent(want, got map[string]any) bool {
	if want[reserved.CopyRef] != got[reserved.CopyRef] {
		return false
	}
	norm := func(props map[string]any) string {
		p := maps.Clone(props)
		delete(p, reserved.CopyRef)
		v, err := table.FromDynamic[T](table.Dynamic{Properties: p})
		if err != nil {
			return fmt.Sprint("invalid:", err)
		}
		d, err := table.ToDynamic(v)
		if err != nil {
			return fmt.Sprint("invalid:", err)
		}
		for k := range d.Properties {
			if _, ok := props[k]; !ok {
				delete(d.Properties, k) // a Listed copy's absent fields
			}
		}
		return fmt.Sprint(d.Properties)
	}
	return norm(want) == norm(got)
}

// scoped filters one partition (all when pk is "") and a RowKey range.
func scoped(pk, lo, hi string) table.Filter {
	f := table.RowKeyRange(lo, hi)
	if pk != "" {
		f = table.And(table.PartitionKey(pk), f)
	}
	return f
}
