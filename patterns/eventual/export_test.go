package eventual

import (
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

// SetHook installs a test hook called at every step boundary of Commit and
// of the worker; an error it returns is a crash at that point.
func SetHook(q *Queue, h func(step string) error) { q.hook = h }

// RecordOp returns the commit-record insert Commit puts in the primary's
// batch for d in partition pk of c's table.
func RecordOp(q *Queue, c *aztables.Client, pk string, d Draft) table.Op {
	return recordOp(q.records[c], pk, d)
}
