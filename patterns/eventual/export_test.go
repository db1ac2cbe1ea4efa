package eventual

import (
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

// SetHook installs a test hook called at every step boundary of Commit and
// of the worker; an error it returns is a crash at that point.
func SetHook(q *Queue, h func(step string) error) { q.hook = h }

// RecordOp returns the commit-record insert Commit puts in the primary's
// batch for d in partition pk of c's table.
func RecordOp(q *Queue, c *aztables.Client, pk string, d Draft) table.Op {
	return recordOp(q.records[c], pk, d, "")
}

// SetJoin replaces batchplan.Join, the one check of Commit's and Apply's
// writes, for tests that count or inspect the checks.
func SetJoin(q *Queue, join func(*table.Profile, ...table.Change) (table.Change, error)) {
	q.join = join
}

// SetSweepMargin changes how much longer than the commit window Sweep
// keeps aborted records (a minute), for tests that cannot wait for it.
func SetSweepMargin(q *Queue, d time.Duration) { q.sweepMargin = d }
