package eventual

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/batchplan"
	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/patterns/table"
)

// Apply writes changes, the parts several patterns make of one write
// ([table.Change]; see "Composing patterns" in package table), all or
// none, on c's table (one of Options.Tables): their operations in one
// entity group transaction, and their intents (Drafts) committed with it.
// Without intents it is [table.Table.Apply]: 1 round trip. With n intents
// it is Commit: reserve, one transaction holding every change's ops and a
// commit record per intent, release: 2n+1 round trips, and the intents
// run if and only if the transaction applied. Before anything is sent,
// the changes are checked once, with the commit records, as
// table.Table.Apply checks its transaction (one partition, each entity
// once, the operations and bytes of one transaction of the table's
// profile; an error names the change that does not fit, and the records
// as "eventual (commit records)"), and each intent must be a Draft of this
// package. A change's NotAfter bounds the transaction's sending as it does
// for table.Table.Apply. The error of a failed transaction is the change's
// own explanation (Change.Explain) when it has one. Like Commit's, an
// ErrCommitWindow means nothing applied: make the changes again, with new
// Drafts.
func (q *Queue) Apply(ctx context.Context, c *aztables.Client, changes ...table.Change) (res CommitResult, err error) {
	ctx, sp := q.obs.Start(ctx, opApply, commitTable(q, c), firstPartition(changes))
	defer func() { sp.EndWrite(err, res.Batch.Verified) }()
	if c == nil {
		return CommitResult{}, fmt.Errorf("%w: Apply needs a table client", ErrInvalid)
	}
	rt, err := q.recordsOf(c)
	if err != nil {
		return CommitResult{}, err
	}
	var drafts []Draft
	for k, ch := range changes {
		for i, in := range ch.Intents {
			d, ok := in.(Draft)
			if !ok {
				return CommitResult{}, fmt.Errorf("%w: intent %d of %s is a %T, not an eventual.Draft (Kind.New)", ErrInvalid, i, changeName(ch, k), in)
			}
			drafts = append(drafts, d)
		}
	}
	if len(drafts) == 0 {
		// Table.Apply's transaction, checked there, once.
		res, err := rt.Apply(ctx, changes...) // c's, with the Queue's profile
		if err != nil && len(res.Ops) == 0 && errors.Is(err, table.ErrInvalid) {
			err = fmt.Errorf("eventual: %w", invalid.Mark(ErrInvalid, err)) // refused before sending
		}
		return CommitResult{Batch: res, Released: true}, err
	}
	tx, err := q.check(rt, changes, drafts)
	if err != nil {
		return CommitResult{}, err
	}
	if !tx.notAfter.IsZero() && !time.Now().Before(tx.notAfter) {
		return CommitResult{}, fmt.Errorf("eventual: %w: the NotAfter of %s passed before anything was sent", table.ErrNotApplied, tx.by)
	}
	res, err = q.commit(ctx, tx)
	return res, tx.explained(err)
}

// changeName is how the core's check names the k-th change: its By, or
// "change k".
func changeName(c table.Change, k int) string {
	if c.By != "" {
		return c.By
	}
	return fmt.Sprintf("change %d", k)
}

// firstPartition is the PartitionKey of the changes' first op (the
// primary's), or "" when they have none.
func firstPartition(changes []table.Change) string {
	for _, c := range changes {
		if len(c.Ops) > 0 {
			return batchplan.PartitionKey(c.Ops[0])
		}
	}
	return ""
}

// recordsOf returns the commit records' table of c, which must be one of
// Options.Tables: the very client value, since two accounts may hold
// tables of one name. The error names c's table and says which client to
// pass.
func (q *Queue) recordsOf(c *aztables.Client) (*table.Table[record], error) {
	if rt := q.records[c]; rt != nil {
		return rt, nil
	}
	name := ""
	if tb, err := table.New[table.Dynamic](c, nil); err == nil {
		name = tb.Name()
	}
	if _, same := q.byName[name]; same {
		return nil, fmt.Errorf("%w: this client of table %q is not the one in Options.Tables: pass that very *aztables.Client value (clients are matched by identity, not by table name, which two accounts may share)", ErrInvalid, name)
	}
	return nil, fmt.Errorf("%w: table %q is not in Options.Tables: add its *aztables.Client there (the worker needs every table intents are committed to) and pass that same client value", ErrInvalid, name)
}
