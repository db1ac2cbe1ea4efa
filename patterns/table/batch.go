package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/retrycore"
)

// Size accounting for the SDK's $batch body (see SubmitTransaction): each
// operation is a MIME part holding an HTTP request whose URL carries the
// endpoint, table name and quoted, escaped keys. opOverhead bounds the part
// headers, request line and HTTP headers with a 512-byte allowance for the
// endpoint and table name; keys count 6 bytes per byte (quote doubling, then
// percent-encoding). batchEnvelope bounds the outer multipart framing.
const (
	opOverhead    = 1024
	batchEnvelope = 512
)

// Op is one write for Submit: build it with a Table's InsertOp, UpsertOp,
// UpdateOp or DeleteOp. An Op is an immutable value; one that could not be
// encoded carries its error, which Submit reports before sending anything.
type Op struct {
	kind   aztables.TransactionType
	pk, rk string
	body   []byte
	etag   *azcore.ETag
	size   int    // bytes in the batch request, an upper bound
	group  uint64 // atomic group, 0 for none
	err    error
	// stamped ops get TkWrites when sent: the transaction's identity,
	// then prev (the history read with etag, for updates).
	stamped bool
	prev    string
}

// keys returns the op's keys (batchplan.Keys).
func (o Op) keys() (pk, rk string) { return o.pk, o.rk }

// Err returns the error that keeps the op from being sent, or nil.
func (o Op) Err() error { return o.err }

func (t *Table[T]) op(name string, kind aztables.TransactionType, v *T, etag *azcore.ETag, m Mode) Op {
	pk, rk, err := t.keysOf(name, v)
	if err != nil {
		return Op{kind: kind, err: err}
	}
	mask, err := t.codec.mask(m.fields)
	if err != nil {
		return Op{kind: kind, pk: pk, rk: rk, err: &Error{Op: name, Table: t.name, PartitionKey: pk, RowKey: rk, Err: err}}
	}
	e, err := t.codec.encode(make([]byte, 0, 256), reflect.ValueOf(v).Elem(), pk, rk, mask, t.reservedProps, t.profile)
	if err == nil {
		e, err = t.tag(e, v)
	}
	if err != nil {
		return Op{kind: kind, pk: pk, rk: rk, err: relabel(err, name, t.name)}
	}
	o := newOp(kind, e.pk, e.rk, e.body, etag)
	conditional := etag != nil && *etag != azcore.ETagAny
	if (kind == aztables.TransactionTypeAdd || conditional) && e.stampable() {
		o.stamped = true
		o.size += stampSize
		if conditional {
			o.prev = t.prevWrites(v, *etag)
		}
	}
	return o
}

func newOp(kind aztables.TransactionType, pk, rk string, body []byte, etag *azcore.ETag) Op {
	o := Op{kind: kind, pk: pk, rk: rk, body: body, etag: etag}
	o.size = opOverhead + 6*(len(pk)+len(rk)) + len(body)
	if etag != nil {
		o.size += len(*etag)
	}
	return o
}

// InsertOp is an insert for Submit; it fails if the entity exists.
func (t *Table[T]) InsertOp(v T) Op {
	return t.op("insert", aztables.TransactionTypeAdd, &v, nil, Mode{})
}

// UpsertOp is an insert-or-merge or insert-or-replace for Submit (Fields
// merges only the named properties).
func (t *Table[T]) UpsertOp(v T, mode Mode) Op {
	mode = t.writeMode(&v, mode)
	kind, err := txType("upsert", mode)
	if err != nil {
		return Op{err: err}
	}
	return t.op("upsert", kind, &v, nil, mode)
}

// UpdateOp is a conditional update for Submit: etag is the version read,
// or azcore.ETagAny for any existing version; empty is ErrNoETag.
func (t *Table[T]) UpdateOp(v T, etag azcore.ETag, mode Mode) Op {
	if etag == "" {
		return Op{err: &Error{Op: "update", Table: t.name, Err: ErrNoETag}}
	}
	mode = t.writeMode(&v, mode)
	kind, err := txType("update", mode)
	if err != nil {
		return Op{err: err}
	}
	return t.op("update", kind, &v, &etag, mode)
}

// failedOp is batchplan.Failed: an op that carries err; Submit refuses a
// batch that holds it, before sending anything, with err for its index.
func failedOp(err error) Op {
	if err == nil {
		err = &Error{Op: "batch", Err: fmt.Errorf("%w: a failed op without an error", ErrInvalidBatch)}
	}
	return Op{err: err}
}

// DeleteOp is a conditional delete for Submit: etag is the version read,
// or azcore.ETagAny; empty is ErrNoETag. The entity may be of any type (a
// delete names only keys).
func (t *Table[T]) DeleteOp(partitionKey, rowKey string, etag azcore.ETag) Op {
	return deleteOp(partitionKey, rowKey, etag, t.reserved)
}

func deleteOp(partitionKey, rowKey string, etag azcore.ETag, reserved bool) Op {
	if etag == "" {
		return Op{pk: partitionKey, rk: rowKey, err: &Error{Op: "delete", PartitionKey: partitionKey, RowKey: rowKey, Err: ErrNoETag}}
	}
	err := validKeys(partitionKey, rowKey)
	if err == nil && !reserved {
		err = notReserved(partitionKey, rowKey)
	}
	if err != nil {
		return Op{pk: partitionKey, rk: rowKey, err: relabel(err, "delete", "")}
	}
	b, _ := appendString([]byte(`{"PartitionKey":`), partitionKey)
	b = append(b, `,"RowKey":`...)
	b, _ = appendString(b, rowKey)
	return newOp(aztables.TransactionTypeDelete, partitionKey, rowKey, append(b, '}'), &etag)
}

var groupSeq atomic.Uint64

// Atomic marks ops as one atomic group: Submit sends them in a single
// transaction (together with other ops when they fit), so they are applied
// all or none. They must share a PartitionKey, touch each entity once and
// fit one transaction (100 operations, 4 MiB), else Submit fails before
// sending anything. It returns copies of ops; append them to the ops list.
func Atomic(ops ...Op) []Op {
	id := groupSeq.Add(1)
	out := make([]Op, len(ops))
	for i, o := range ops {
		o.group = id
		out[i] = o
	}
	return out
}

// BatchOptions configures Submit. A nil *BatchOptions means defaults.
type BatchOptions struct {
	// Concurrency is the most transactions in flight at once; transactions
	// of one partition always run one after another, in order. Default: 4.
	Concurrency int
	// ContinueOnError keeps sending a partition's later transactions after
	// one of its transactions failed. Default (false): they are not sent
	// (their ops report ErrNotApplied), since later ops may depend on
	// earlier ones. Other partitions continue either way.
	ContinueOnError bool
}

// OpResult is the outcome of one op of Submit: applied (Applied), not
// applied (Err is set and is not ErrOutcomeUnknown), or unknown
// (errors.Is(Err, ErrOutcomeUnknown): its transaction's response was lost
// and a read could not settle whether it was applied).
type OpResult struct {
	// Applied reports whether the op took effect.
	Applied bool
	// Verified reports that the transaction's response was lost and a read
	// proved it applied; ETag is then empty except for the op verified.
	Verified bool
	// ETag is the entity's new ETag (empty for deletes).
	ETag azcore.ETag
	// Err says why the op was not applied: the service's error for the op
	// that failed its transaction (*Error), or ErrNotApplied for the ops
	// rolled back with it or never sent; or that its outcome is unknown
	// (ErrOutcomeUnknown).
	Err error
}

// BatchResult reports every op of Submit, in the order given.
type BatchResult struct {
	Ops []OpResult
	// Transactions is the number of transactions sent: the round trips.
	Transactions int
	// Verified reports whether some op's success was verified by a read
	// after its transaction's response was lost (as Result.Verified).
	Verified bool
}

// BatchError is returned by Submit when some ops were not applied, or their
// outcome is unknown (then errors.Is(err, ErrOutcomeUnknown)).
type BatchError struct {
	Failed  int     // ops not applied, or of unknown outcome
	Unknown int     // of those, the ops whose outcome is unknown
	Total   int     // ops submitted
	Errs    []error // the distinct causes: failing ops' errors, validation errors, context errors
}

// Error summarises the failures, naming up to three causes.
func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table: batch: %d of %d operations not applied", e.Failed-e.Unknown, e.Total)
	if e.Unknown > 0 {
		fmt.Fprintf(&b, ", %d of unknown outcome", e.Unknown)
	}
	for i, err := range e.Errs {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Errs)-3)
			break
		}
		b.WriteString("; ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the causes, so errors.Is and errors.As see them.
func (e *BatchError) Unwrap() []error { return e.Errs }

// OpError names the failing op of a transaction by its index in the ops
// given to Submit. It wraps the service's error for that op.
type OpError struct {
	Index int    // index in Submit's ops
	Err   *Error // what failed
}

// Error names the op by its index, then the failure.
func (e *OpError) Error() string { return fmt.Sprintf("op %d: %v", e.Index, e.Err) }

// Unwrap returns the *Error.
func (e *OpError) Unwrap() error { return e.Err }

func submit(ctx context.Context, o *obs.Obs, c *aztables.Client, name string, d *direct, p *Profile, ops []Op, opts *BatchOptions) (res BatchResult, err error) {
	ctx, sp := startSpan(ctx, o, opSubmit, name, "")
	defer func() {
		res.Verified = slices.ContainsFunc(res.Ops, func(o OpResult) bool { return o.Verified })
		sp.EndWrite(err, res.Verified)
	}()
	if sp.Traced() {
		sp.SetPartition(onePartition(ops))
	}
	if opts == nil {
		opts = &BatchOptions{}
	}
	res = BatchResult{Ops: make([]OpResult, len(ops))}
	parts, err := plan(ops, p)
	if err != nil {
		for i := range res.Ops {
			res.Ops[i].Err = fmt.Errorf("%w: the batch failed validation", ErrNotApplied)
		}
		return res, err
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = 4
	}
	work := make(chan []txn)
	var wg sync.WaitGroup
	var sent atomic.Int64
	var mu sync.Mutex
	var causes []error // one per failed transaction, and the context's error
	addCause := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range causes {
			if c == err {
				return
			}
		}
		causes = append(causes, err)
	}
	for w := 0; w < min(conc, len(parts)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for txns := range work {
				failed := false
				for _, tx := range txns {
					if err := ctx.Err(); err != nil {
						addCause(err)
						for _, i := range tx {
							res.Ops[i].Err = fmt.Errorf("%w: not sent: %w", ErrNotApplied, err)
						}
						continue
					}
					if failed && !opts.ContinueOnError {
						for _, i := range tx {
							res.Ops[i].Err = fmt.Errorf("%w: not sent because an earlier transaction of its partition failed", ErrNotApplied)
						}
						continue
					}
					sent.Add(1)
					if cause := send(ctx, c, d, ops, tx, res.Ops); cause != nil {
						failed = true
						addCause(cause)
					}
				}
			}
		}()
	}
	for _, p := range parts {
		work <- p
	}
	close(work)
	wg.Wait()
	res.Transactions = int(sent.Load())
	return res, batchError(res.Ops, causes)
}

// Submit writes ops with as few transactions as the service allows: it
// groups them by PartitionKey, cuts each partition's ops into transactions
// of at most the profile's operations and request body (Table Storage 100
// and 4 MiB, Cosmos DB 100 and 2 MB), never splits an Atomic group, never
// puts one entity twice into a transaction (a repeat starts a new one,
// keeping the order), and runs independent partitions concurrently.
// Everything is validated before the first request. The ops may come from
// any Table on t's client (of any T); t gives the client and the profile.
//
// It returns a result for every op, and a *BatchError when any op was not
// applied. Transactions are atomic: when one op fails, the service rolls
// back its whole transaction; the result names the failing op (OpError)
// and marks the rest of that transaction ErrNotApplied.
//
// If a transaction's response is lost and the retry policy resends it, the
// resend fails (409 on inserts, 412 on conditional writes) although the first
// attempt was applied. Submit settles that by reading one or two of the
// transaction's entities (see the package documentation's outcome table):
// its ops are then reported applied (Verified), not applied, or, when no
// read can tell, with ErrOutcomeUnknown.
func (t *Table[T]) Submit(ctx context.Context, ops []Op, opts *BatchOptions) (BatchResult, error) {
	return submit(ctx, t.obs, t.client, t.name, t.direct, t.profile, ops, opts)
}

// batchError reports the ops not applied and why: the causes are the
// failing op of each failed transaction, or the transaction's own failure
// (throttling, transport, context), each once.
func batchError(results []OpResult, causes []error) error {
	be := &BatchError{Total: len(results), Errs: causes}
	for _, r := range results {
		if !r.Applied {
			be.Failed++
			if errors.Is(r.Err, ErrOutcomeUnknown) {
				be.Unknown++
			}
		}
	}
	if be.Failed == 0 {
		return nil
	}
	return be
}

// txn is one transaction: indexes into the ops.
type txn []int

// plan validates ops and cuts them into transactions per partition, in the
// order partitions first appear.
func plan(ops []Op, p *Profile) ([][]txn, error) {
	var errs []error
	for i, o := range ops {
		switch {
		case o.err != nil:
			errs = append(errs, &OpError{Index: i, Err: asError(o.err)})
		case o.kind == "":
			errs = append(errs, &OpError{Index: i, Err: &Error{Op: "batch", Err: fmt.Errorf("%w: a zero Op: build ops with InsertOp, UpsertOp, UpdateOp or DeleteOp", ErrInvalidBatch)}})
		}
	}
	byPK := map[string]int{}
	var parts [][]int // op indexes per partition, in order
	groups := map[uint64][]int{}
	for i, o := range ops {
		if o.err != nil {
			continue
		}
		p, ok := byPK[o.pk]
		if !ok {
			p = len(parts)
			byPK[o.pk] = p
			parts = append(parts, nil)
		}
		if o.group != 0 {
			if first, seen := groups[o.group]; seen && ops[first[0]].pk != o.pk {
				errs = append(errs, &OpError{Index: i, Err: &Error{Op: "batch", PartitionKey: o.pk, RowKey: o.rk,
					Err: fmt.Errorf("%w: atomic group spans partitions %q and %q: a transaction holds one partition", ErrInvalidBatch, ops[first[0]].pk, o.pk)}})
				continue
			}
			groups[o.group] = append(groups[o.group], i)
		}
		parts[p] = append(parts[p], i)
	}
	for _, members := range groups {
		errs = append(errs, reorders(ops, members)...)
		size, rows := batchEnvelope, map[string]bool{}
		for _, i := range members {
			size += ops[i].size
			if rows[ops[i].rk] {
				errs = append(errs, &OpError{Index: i, Err: &Error{Op: "batch", PartitionKey: ops[i].pk, RowKey: ops[i].rk,
					Err: fmt.Errorf("%w: the entity appears twice in one atomic group", ErrInvalidBatch)}})
			}
			rows[ops[i].rk] = true
		}
		if len(members) > p.MaxBatchOps || size > p.MaxBatchSize {
			o := ops[members[0]]
			errs = append(errs, &OpError{Index: members[0], Err: &Error{Op: "batch", PartitionKey: o.pk, RowKey: o.rk,
				Err: fmt.Errorf("%w: atomic group of %d operations and about %d bytes does not fit one transaction of %s (%d operations, %d bytes)", ErrTooLarge, len(members), size, p.Name, p.MaxBatchOps, p.MaxBatchSize)}})
		}
	}
	if len(errs) > 0 {
		return nil, &BatchError{Failed: len(ops), Total: len(ops), Errs: errs}
	}
	out := make([][]txn, len(parts))
	for i, idx := range parts {
		out[i] = chunk(ops, idx, p)
	}
	return out, nil
}

// reorders reports ops that an atomic group would overtake: the group is
// sent where its first member stands, so a later member moves ahead of the
// ops between; if one of those touches the same entity, their order would
// change.
func reorders(ops []Op, members []int) []error {
	var errs []error
	in := map[int]bool{}
	for _, m := range members {
		in[m] = true
	}
	for _, m := range members[1:] {
		for i := members[0] + 1; i < m; i++ {
			if !in[i] && ops[i].err == nil && ops[i].pk == ops[m].pk && ops[i].rk == ops[m].rk {
				errs = append(errs, &OpError{Index: i, Err: &Error{Op: "batch", PartitionKey: ops[i].pk, RowKey: ops[i].rk,
					Err: fmt.Errorf("%w: op %d touches the same entity as op %d of an atomic group that starts before it; the group is sent as one transaction at its first op, which would reorder them", ErrInvalidBatch, i, m)}})
			}
		}
	}
	return errs
}

func asError(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Op: "batch", Err: err}
}

// chunk packs one partition's ops into transactions, keeping each atomic
// group whole (placed where its first op is) and the order of ops.
func chunk(ops []Op, idx []int, p *Profile) []txn {
	var units [][]int
	unitOf := map[uint64]int{}
	for _, i := range idx {
		if g := ops[i].group; g != 0 {
			if u, ok := unitOf[g]; ok {
				units[u] = append(units[u], i)
				continue
			}
			unitOf[g] = len(units)
		}
		units = append(units, []int{i})
	}
	var txns []txn
	var cur txn
	size := batchEnvelope
	rows := map[string]bool{}
	for _, u := range units {
		usize, clash := 0, false
		for _, i := range u {
			usize += ops[i].size
			clash = clash || rows[ops[i].rk]
		}
		if len(cur) > 0 && (clash || len(cur)+len(u) > p.MaxBatchOps || size+usize > p.MaxBatchSize) {
			txns = append(txns, cur)
			cur, size, rows = nil, batchEnvelope, map[string]bool{}
		}
		cur = append(cur, u...)
		size += usize
		for _, i := range u {
			rows[ops[i].rk] = true
		}
	}
	if len(cur) > 0 {
		txns = append(txns, cur)
	}
	return txns
}

// send submits one transaction and records its ops' results. It returns
// nil when the transaction was applied, else the cause of its failure: the
// failing op's *OpError, or the transaction's *Error. When an attempt's
// response was lost and the transaction then failed, it reads one of the
// transaction's entities to learn whether the lost attempt was applied
// (see verify); if that cannot be settled, every op is reported with
// ErrOutcomeUnknown.
func send(ctx context.Context, c *aztables.Client, d *direct, ops []Op, tx txn, results []OpResult) error {
	id := newWriteID()
	bodies := make([][]byte, len(tx))
	for j, i := range tx {
		bodies[j] = ops[i].body
		if ops[i].stamped {
			bodies[j] = appendStamp(slices.Clip(ops[i].body), stampValue(id, ops[i].prev))
		}
	}
	var raw *http.Response
	var err error
	tctx, tr := retrycore.Track(ctx)
	if d != nil {
		if raw, err = d.batch(tctx, ops, tx, bodies); err == nil && innerFailure(raw, len(tx)) {
			err = &azcore.ResponseError{StatusCode: raw.StatusCode, RawResponse: raw}
		}
	} else {
		acts := make([]aztables.TransactionAction, len(tx))
		for j, i := range tx {
			acts[j] = aztables.TransactionAction{ActionType: ops[i].kind, Entity: bodies[j], IfMatch: ops[i].etag}
		}
		_, err = c.SubmitTransaction(policy.WithCaptureResponse(tctx, &raw), acts, nil)
	}
	if err == nil {
		etags := batchETags(raw)
		for j, i := range tx {
			results[i].Applied = true
			if j < len(etags) && ops[i].kind != aztables.TransactionTypeDelete {
				results[i].ETag = etags[j]
			}
		}
		return nil
	}
	failed, opErr := transactionError(err, ops, tx)
	opErr.Table = aboutClient(c).name
	var failing write
	if failed >= 0 {
		failing = opWrite(ops[tx[failed]], id)
	}
	if ambiguous(tr, failing, opErr) {
		o, verified, etag := unknown, -1, azcore.ETag("")
		if ctx.Err() == nil {
			o, verified, etag = verifyTransaction(ctx, c, ops, tx, failed, id)
		}
		switch o {
		case applied:
			for j, i := range tx {
				results[i] = OpResult{Applied: true, Verified: true}
				if j == verified {
					results[i].ETag = etag
				}
			}
			return nil
		case unknown:
			opErr.Unknown = true
			for _, i := range tx {
				results[i].Err = opErr
			}
			return opErr
		}
		opErr.Unknown = false
	}
	var cause error = opErr
	for j, i := range tx {
		switch {
		case j == failed:
			cause = &OpError{Index: i, Err: opErr}
			results[i].Err = cause
		case failed < 0:
			results[i].Err = fmt.Errorf("%w: its transaction failed: %w", ErrNotApplied, opErr)
		default:
			results[i].Err = fmt.Errorf("%w: rolled back because op %d of its transaction failed", ErrNotApplied, tx[failed])
		}
	}
	return cause
}

// verifyTransaction settles whether a transaction whose response was lost
// was applied, by verifying its failing op and, failing that, its first
// other verifiable op: a transaction is atomic, so one op settles all. It
// returns the outcome, the position in tx of the op verified and, when that
// op is still the entity's newest write, its ETag.
func verifyTransaction(ctx context.Context, c *aztables.Client, ops []Op, tx txn, failed int, id string) (outcome, int, azcore.ETag) {
	order := make([]int, 0, len(tx))
	if failed >= 0 {
		order = append(order, failed)
	}
	for j := range tx {
		if j != failed {
			order = append(order, j)
		}
	}
	tried := 0
	for _, j := range order {
		if tried == 2 {
			break
		}
		w := opWrite(ops[tx[j]], id)
		if !w.verifiable() {
			continue
		}
		tried++
		if out, etag := verify(ctx, c, w); out != unknown {
			return out, j, etag
		}
	}
	return unknown, -1, ""
}

// opWrite describes op o of a transaction with identity id, for verify.
func opWrite(o Op, id string) write {
	w := write{kind: o.kind, pk: o.pk, rk: o.rk}
	if o.etag != nil {
		w.etag = *o.etag
	}
	if o.stamped {
		w.id = id
		w.prev, _, _ = strings.Cut(o.prev, ",")
	}
	return w
}

var (
	innerStatus = regexp.MustCompile(`HTTP/1\.1 (\d{3})`)
	innerCode   = regexp.MustCompile(`"code"\s*:\s*"([^"]+)"`)
	innerIndex  = regexp.MustCompile(`"value"\s*:\s*"(\d+):`)
)

// transactionError interprets a failed SubmitTransaction: for the service's
// 202 with an inner failure it finds the failing op (its position in tx, or
// -1 when the whole transaction failed) and its status and code.
func transactionError(err error, ops []Op, tx txn) (int, *Error) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted || re.RawResponse == nil {
		return -1, newError("batch", "", ops[tx[0]].pk, "", err)
	}
	body, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		return -1, &Error{Op: "batch", PartitionKey: ops[tx[0]].pk, StatusCode: re.StatusCode, Err: err}
	}
	status, code, index := 0, "", -1
	if m := innerStatus.FindSubmatch(body); m != nil {
		status, _ = strconv.Atoi(string(m[1]))
	}
	if m := innerCode.FindSubmatch(body); m != nil {
		code = string(m[1])
	}
	if m := innerIndex.FindSubmatch(body); m != nil {
		index, _ = strconv.Atoi(string(m[1]))
	}
	inner := &azcore.ResponseError{StatusCode: status, ErrorCode: code, RawResponse: re.RawResponse}
	if index < 0 || index >= len(tx) {
		return -1, &Error{Op: "batch", PartitionKey: ops[tx[0]].pk, StatusCode: status, Code: code, Err: inner}
	}
	o := ops[tx[index]]
	return index, &Error{Op: opName(o.kind), PartitionKey: o.pk, RowKey: o.rk, StatusCode: status, Code: code, Err: inner}
}

func opName(k aztables.TransactionType) string {
	switch k {
	case aztables.TransactionTypeAdd:
		return "insert"
	case aztables.TransactionTypeDelete:
		return "delete"
	case aztables.TransactionTypeUpdateMerge, aztables.TransactionTypeUpdateReplace:
		return "update"
	}
	return "upsert"
}

// batchETags extracts the per-operation ETags of a successful transaction
// from its multipart response, in operation order: each operation's answer
// is an HTTP message ("HTTP/1.1 204 No Content", headers, blank line)
// inside the changeset. It scans header lines directly; http.ReadResponse
// per operation cost ~10% of bulk-load throughput.
func batchETags(raw *http.Response) []azcore.ETag {
	if raw == nil {
		return nil
	}
	body, err := runtime.Payload(raw)
	if err != nil {
		return nil
	}
	var etags []azcore.ETag
	status := []byte("HTTP/1.1 ")
	for {
		i := bytes.Index(body, status)
		if i < 0 {
			return etags
		}
		body = body[i+len(status):]
		headers := body
		if end := bytes.Index(headers, []byte("\r\n\r\n")); end >= 0 {
			headers = headers[:end]
		}
		var etag azcore.ETag
		for len(headers) > 0 {
			line := headers
			if j := bytes.IndexByte(headers, '\n'); j >= 0 {
				line, headers = headers[:j], headers[j+1:]
			} else {
				headers = nil
			}
			if len(line) > 5 && bytes.EqualFold(line[:5], []byte("etag:")) {
				etag = azcore.ETag(bytes.TrimSpace(line[5:]))
				break
			}
		}
		etags = append(etags, etag)
	}
}

// estimateBatchSize returns the upper bound Submit uses for the request body
// of one transaction holding ops.
func estimateBatchSize(ops []Op) int {
	n := batchEnvelope
	for _, o := range ops {
		n += o.size
	}
	return n
}
