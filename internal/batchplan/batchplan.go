// Package batchplan gives tablekit's pattern packages the parts of package
// table's batch planner that only they use: an op that carries the error
// met building it, a batch's estimated size, and the joining of several
// patterns' changes into one transaction. Package table provides them
// (Register, called by its init); the types are table's (table.Op,
// table.Change, table.Profile), given here as type parameters because
// table imports this package. Being internal, it is tablekit's own.
package batchplan

// Planner is what package table provides, over its own types.
type Planner struct {
	// Failed returns a table.Op carrying err.
	Failed func(err error) any
	// Size estimates the request body of a []table.Op.
	Size func(ops any) int
	// Join joins a []table.Change under a *table.Profile.
	Join func(p any, changes any) (any, error)
	// Explained explains err by a table.Change's Explain.
	Explained func(c any, err error) error
	// Keys returns a table.Op's keys.
	Keys func(op any) (pk, rk string)
}

var planner Planner

// Register is called once by package table's init.
func Register(p Planner) { planner = p }

// Failed returns an op that carries err: its batch fails, nothing sent,
// with err. For op builders that find an error before the network and
// return an Op alone (InsertOp, AppendOp). Op is table.Op.
func Failed[Op any](err error) Op { return planner.Failed(err).(Op) }

// Size estimates the size of the entity group transaction of ops, as
// table.Table.Submit sends it, in bytes: for packages that split their own
// batches under a profile's MaxBatchSize. Op is table.Op.
func Size[Op any](ops []Op) int { return planner.Size(ops) }

// Join checks changes as one transaction under profile p (one partition,
// no row touched twice, the profile's limits) and joins them into one
// Change, as table.Table.Apply does before sending. Change is
// table.Change, Profile table.Profile.
func Join[Change, Profile any](p *Profile, changes ...Change) (Change, error) {
	j, err := planner.Join(p, changes)
	if err != nil {
		return *new(Change), err
	}
	return j.(Change), nil
}

// Explained returns err, the error of a write of c's ops in one
// transaction (its batch starting with them), as c's Explain explains the
// op that failed it; otherwise, and for an unknown outcome, err as it is.
// Change is table.Change.
func Explained[Change any](c Change, err error) error { return planner.Explained(c, err) }

// PartitionKey returns op's PartitionKey. Op is table.Op.
func PartitionKey[Op any](op Op) string { pk, _ := planner.Keys(op); return pk }

// RowKey returns op's RowKey. Op is table.Op.
func RowKey[Op any](op Op) string { _, rk := planner.Keys(op); return rk }
