package eventual

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tablekit/tablekit/internal/batchplan"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

// Apply writes changes, the parts several patterns make of one write
// ([table.Change]; see "Composing patterns" in package table), all or
// none, on c's table (one of Options.Tables): their operations in one
// entity group transaction, and their intents (Drafts) committed with it.
// Without intents it is [table.Apply]: 1 round trip. With n intents it is
// Commit: reserve, one transaction holding every change's ops and a
// commit record per intent, release: 2n+1 round trips, and the intents
// run if and only if the transaction applied. Before anything is sent,
// Table.Apply's check checks the changes with the commit records (one
// partition, each entity once, the operations and bytes of one
// transaction of the table's profile; an error names the change that
// does not fit, and the records as "eventual (commit records)"), and
// each intent must be a Draft of this package. A change's NotAfter bounds
// the transaction's sending as it does for table.Apply. The error of a
// failed transaction is the change's own explanation (Change.Explain)
// when it has one. Like Commit's, an ErrCommitWindow means nothing
// applied: make the changes again, with new Drafts.
func (q *Queue) Apply(ctx context.Context, c *aztables.Client, changes ...table.Change) (res CommitResult, err error) {
	ctx, sp := q.obs.Start(ctx, opApply, commitTable(q, c), "")
	defer func() { sp.EndWrite(err, res.Batch.Verified) }()
	if c == nil {
		return CommitResult{}, fmt.Errorf("%w: Apply needs a table client", ErrInvalid)
	}
	rt, err := q.recordsOf(c)
	if err != nil {
		return CommitResult{}, err
	}
	j, err := batchplan.Join(rt.Profile(), changes...)
	if err != nil {
		return CommitResult{}, fmt.Errorf("eventual: %w", invalid.Mark(ErrInvalid, err))
	}
	pk := batchplan.PartitionKey(j.Ops[0])
	sp.SetPartition(pk)
	if len(j.Intents) == 0 {
		res, err := rt.Apply(ctx, changes...) // c's, with the Queue's profile
		return CommitResult{Batch: res, Released: true}, err
	}
	drafts := make([]Draft, len(j.Intents))
	for i, in := range j.Intents {
		d, ok := in.(Draft)
		if !ok {
			return CommitResult{}, fmt.Errorf("%w: intent %d of %s is a %T, not an eventual.Draft (Kind.New)", ErrInvalid, i, j.By, in)
		}
		drafts[i] = d
	}
	// The transaction with its commit records, sized before anything is
	// sent (the records name their messages: a placeholder id here).
	records := table.Change{By: "eventual (commit records)"}
	for _, d := range drafts {
		records.Ops = append(records.Ops, recordOp(rt, pk, d, "00000000-0000-0000-0000-000000000000"))
	}
	if _, err := batchplan.Join(rt.Profile(), append(slices.Clone(changes), records)...); err != nil {
		return CommitResult{}, fmt.Errorf("eventual: %w", invalid.Mark(ErrInvalid, err))
	}
	if !j.NotAfter.IsZero() && !time.Now().Before(j.NotAfter) {
		return CommitResult{}, fmt.Errorf("eventual: %w: the NotAfter of %s passed before anything was sent", table.ErrNotApplied, j.By)
	}
	res, err = q.commit(ctx, c, j.Ops, j.NotAfter, drafts)
	return res, batchplan.Explained(j, err)
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
