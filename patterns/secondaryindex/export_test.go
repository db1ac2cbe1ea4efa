package secondaryindex

import (
	"context"

	"github.com/tablekit/tablekit/patterns/eventual"
)

// SetHook installs a test hook called before each step of the worker's
// reconciliation ("read", "put", "delete", "reread"); an error it returns
// is a crash there.
func SetHook[T any](s *Store[T], h func(step string) error) { s.hook = h }

// Reconcile runs the worker's handling of an intent for primary pk/id that
// names old as its previous copies (index, partition, RowKey each), as a
// message planted on the queue could.
func Reconcile[T any](ctx context.Context, s *Store[T], pk, id string, old ...[3]string) error {
	p := intent{PK: pk, ID: id}
	for _, o := range old {
		p.Old = append(p.Old, copyRef{o[0], o[1], o[2]})
	}
	return s.reconcile(ctx, eventual.Intent[intent]{Payload: p})
}
