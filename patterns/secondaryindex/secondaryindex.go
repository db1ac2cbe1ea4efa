package secondaryindex

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/keycursor"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/largerows"

	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// ErrInvalid is the sentinel for a request or configuration rejected
// before the network: bad index or primary names, an index key that is not
// valid, a write that does not fit one transaction (the error names the
// index that overflows), a missing ETag. It matches [table.ErrInvalid];
// errors about keys also match [table.ErrInvalidKey], a missing ETag
// [table.ErrNoETag].
var ErrInvalid = invalid.New("secondaryindex: invalid request")

// ErrDuplicate is returned (with table.ErrAlreadyExists) when a write
// would give a unique index a value another entity has: nothing was
// written. The error names the index and the value. The worker of a
// unique OtherPartition index returns it when the value's copy is
// another entity's, and Rebuild when two entities have one value (Check
// reports the one without the copy as Missing).
var ErrDuplicate = errors.New("secondaryindex: duplicate value in a unique index")

// ErrCorrupt is returned by a read that met an index copy this index
// could not have written: one that names a primary its partition cannot
// hold (another tenant's entity), or whose keys do not match the primary
// it names. Such a row is drift, planted or damaged: Check reports it as
// an orphan and Rebuild deletes it. The error names the row.
var ErrCorrupt = errors.New("secondaryindex: an index copy this index could not have written")

// Holds says what an index copy holds.
type Holds int

const (
	// Whole copies hold every property of the entity (a fully
	// denormalized index): a lookup is one read.
	Whole Holds = iota
	// KeysOnly copies hold only the primary's id (a normalized index): a
	// lookup reads the copy, then the primary.
	KeysOnly
	// Listed copies hold the properties named in Index.Fields (a
	// partially denormalized index): a lookup returns those fields, or
	// reads the primary when asked to.
	Listed
)

// Where says where an index's copies live.
type Where int

const (
	// SamePartition keeps the copies in the primary's partition, written
	// in the primary's entity group transaction: strongly consistent
	// (guide pattern 1).
	SamePartition Where = iota
	// OtherPartition keeps the copies in another partition (Index.Partition)
	// and optionally another table (Index.Table), kept by an intent of
	// patterns/eventual: eventually consistent (guide pattern 2).
	OtherPartition
)

// Index declares one secondary index of a Store.
type Index[T any] struct {
	// Name names the index and starts its copies' RowKeys:
	// keys.Join(Name, value parts...). ASCII letters and digits, 1 to 32.
	Name string
	// On names the properties of T the index is over, in order: one
	// ("Email"), or several for a compound value ordered property by
	// property (last name, then first name). Required. Lookup, Find and
	// Range take the value as T holds it: for one property, a value of
	// its type; for several, a []any of one value per property, in On's
	// order (Find and Range: the first few). Without a Key, each property
	// must be a string, an integer or a time.Time: its value becomes a
	// RowKey part that sorts as the values do (a string as it is, escaped
	// by keys.Join; an integer as keys.Int64, or keys.Pad for unsigned
	// ones; a time as its .NET ticks).
	On []string
	// Key, if set, computes the RowKey parts of an entity's value instead:
	// one part per On property, part i from property On[i] only (so a
	// lookup value, set into a T, gives its parts), such as a normalized
	// email or a blind value (encryption.Table.IndexKey). Nil parts mean
	// the entity has no copy in this index (a sparse index). Parts may be
	// any strings; they are escaped (keys.Join). Default: On's values.
	Key func(v *T) []string
	// Unique makes the index reject a value that another entity has. A
	// non-unique index appends the primary's id to its copies' RowKeys
	// (an OtherPartition one, the primary's PartitionKey and id), so
	// copies never collide. A unique OtherPartition index whose Partition
	// is shared by several primary partitions is unique across them.
	Unique bool
	// Holds says what the copies hold; Fields lists the properties of a
	// Listed index.
	Holds  Holds
	Fields []string
	// Where says where the copies live. OtherPartition needs
	// Options.Queue.
	Where Where
	// Partition maps a primary's PartitionKey to the partition of its
	// copies, for OtherPartition. Default: keys.Join(Name, pk) ("email!Sales").
	// Return a constant for one organisation-wide index partition: then
	// Lookup, Find and Range with pk "" search every primary partition,
	// and with a pk only that one's entities. It must be a pure function:
	// it also checks, on every read, that a copy is in the partition of
	// the primary it names.
	Partition func(pk string) string
	// Table holds the copies of an OtherPartition index in another table.
	// Default: the primary's table.
	Table *table.Table[table.Dynamic]

	on []onField // On's fields, set by New
}

// Options configures a Store. A nil *Options means defaults: primary rows
// named "id" and no index.
type Options[T any] struct {
	// Primary names the primary rows and starts their RowKeys:
	// keys.Join(Primary, id), the guide's "empid_000223". ASCII letters
	// and digits, 1 to 32; not one of the index names. Default: "id". Give
	// each Store of a table its own Primary.
	Primary string
	// Indexes are the secondary indexes. None is a Store of primaries
	// only, to which indexes can be added later (Rebuild writes their
	// copies).
	Indexes []Index[T]
	// Queue carries the intents of OtherPartition indexes; required when
	// there is one. Register Store.Handler with the queue's Worker, and
	// include the primary's table in the Queue's Options.Tables.
	Queue *eventual.Queue
	// Retry is the policy for the read-modify-write loops (Modify, and
	// Update and Delete with azcore.ETagAny) when another writer changed
	// the entity in between. Default: retry.Default.
	Retry *retry.Policy
	// Sealer, if set, transforms each primary row on its way to storage
	// and back, for client-side encryption (patterns/encryption's Table is
	// one). Copies are never sealed, so no index may copy a sealed
	// property: Whole indexes are refused, and so are Listed fields that
	// Sealed reports. Default: none (rows stored as T encodes them).
	Sealer Sealer
	// Large keeps T's large values (a photo) in blobs, as its
	// patterns/largeentity Store does for its own entities: the Store's
	// primary rows hold a pointer in place of each value Large offloads,
	// written blob first under a write-unique name, so a primary never
	// points at a missing blob. Large must be a largeentity Store of T over
	// this Store's table (the same *aztables.Client): its Sweep reads these
	// primaries to delete the blobs no version points at. Copies never hold
	// a value Large may offload: Whole indexes are refused, and so are
	// Listed fields Large chooses. With a Sealer, the primary row is sealed
	// with its pointers in place (the pointers stay plain, the blobs hold
	// the values as T encodes them), so a field may be sealed or offloaded
	// but not both (New refuses it). Default: none.
	Large *largeentity.Store[T]
	// Telemetry receives the spans, metrics and log records of the
	// Store's operations. Default (nil): the global OpenTelemetry
	// providers and slog.Default().
	Telemetry *table.Telemetry
}

// Sealer transforms primary rows for storage, such as
// patterns/encryption's Table, which encrypts some of their properties.
// Index keys are computed from the entity before Seal: give an index over
// a sealed property a Key that reveals nothing (encryption.Table.IndexKey).
// Implementations must be safe for concurrent use.
type Sealer interface {
	// Seal rewrites d, a primary row about to be written with its final
	// keys, in place.
	Seal(ctx context.Context, d *table.Dynamic) error
	// Open reverses Seal on d, a primary row as read.
	Open(ctx context.Context, d *table.Dynamic) error
	// Sealed reports whether Seal rewrites property name: no copy may
	// hold it.
	Sealed(name string) bool
}

// Store keeps a table's entities of type T together with their secondary
// indexes. It is safe for concurrent use.
type Store[T any] struct {
	tbl     *table.Table[table.Dynamic]
	primary string
	indexes []Index[T]
	byName  map[string]*Index[T]
	queue   *eventual.Queue
	sealer  Sealer
	large   largerows.Store[T] // Options.Large
	kind    eventual.Kind[intent]
	retry   retry.Policy
	obs     *obs.Obs

	hook func(step string) error // tests: a crash between reconcile steps
}

// defaultPrimary is the Primary of a Store whose Options leave it empty.
const defaultPrimary = "id"

// New returns a Store for entities of type T in tbl (explicit: New[T]):
// the rows are the Store's own making from T (primaries and copies), so it
// takes a [table.Table] of [table.Dynamic]. T must be a struct type
// table.New accepts, with PartitionKey and RowKey fields and no property
// under ["Tk"]: the RowKey field holds the
// entity's id, stored as keys.Join(Primary, id). A nil opts means
// defaults. It sends nothing.
func New[T any](tbl *table.Table[table.Dynamic], opts *Options[T]) (*Store[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: a table is required", ErrInvalid)
	}
	if opts == nil {
		opts = &Options[T]{}
	}
	s := &Store[T]{tbl: reserved.Properties(tbl), primary: opts.Primary, indexes: slices.Clone(opts.Indexes), byName: map[string]*Index[T]{}, queue: opts.Queue, sealer: opts.Sealer, retry: retry.Default, obs: obs.New((*obs.Config)(opts.Telemetry))}
	if opts.Large != nil {
		s.large = largerows.Of[T](opts.Large)
	}
	switch {
	case s.large != nil && s.large.Client() != tbl.Client():
		return nil, fmt.Errorf("%w: Options.Large is a largeentity Store of another table client: it must be over this Store's table (the same *aztables.Client), whose primaries its Sweep reads", ErrInvalid)
	}
	if s.primary == "" {
		s.primary = defaultPrimary
	}
	if opts.Retry != nil {
		s.retry = *opts.Retry
	}
	if err := validName("Primary", s.primary); err != nil {
		return nil, err
	}
	if err := s.checkType(); err != nil {
		return nil, err
	}
	inter := false
	for i := range s.indexes {
		ix := &s.indexes[i]
		if err := s.checkIndex(ix); err != nil {
			return nil, err
		}
		if ix.Where == OtherPartition {
			inter = true
			if ix.Partition == nil {
				name := ix.Name
				ix.Partition = func(pk string) string { return keys.Join(name, pk) }
			}
			if ix.Table == nil {
				ix.Table = tbl
			}
			// Copies carry TkRef; their cursors are the Store's.
			ix.Table = keycursor.Sealed(reserved.Properties(ix.Table), keycursor.KeyOf(tbl))
		}
		s.byName[ix.Name] = ix
	}
	if inter {
		if s.queue == nil {
			return nil, fmt.Errorf("%w: OtherPartition indexes need Options.Queue", ErrInvalid)
		}
		s.kind = eventual.NewKind[intent]("tk-secondaryindex/" + tbl.Name() + "/" + s.primary)
	}
	return s, nil
}

// checkType checks that T has key fields, no property under
// "Tk" (TkRef's), and none that both the Sealer
// seals and Options.Large offloads (its blob would hold it unsealed).
func (s *Store[T]) checkType() error {
	fields, err := fieldmodel.Of[T]()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var pk, rk bool
	for _, f := range fields {
		switch f.Role {
		case fieldmodel.PartitionKey:
			pk = true
		case fieldmodel.RowKey:
			rk = true
		case fieldmodel.Property:
			if err := fieldmodel.ValidName(f.Property); err != nil {
				return fmt.Errorf("%w: field %s: %w", ErrInvalid, f.Name, err)
			}
			if s.sealer != nil && s.large != nil && s.sealer.Sealed(f.Property) && s.large.Offloads(f.Property) {
				return fmt.Errorf("%w: field %s is both sealed (Options.Sealer) and a large value (Options.Large), whose blob the Sealer does not seal: seal it or offload it, not both", ErrInvalid, f.Name)
			}
		}
	}
	if !pk || !rk {
		return fmt.Errorf("%w: %v has no PartitionKey and RowKey fields", ErrInvalid, reflect.TypeFor[T]())
	}
	return nil
}

// checkIndex checks one index's declaration against the Store's.
func (s *Store[T]) checkIndex(ix *Index[T]) error {
	if err := validName("index", ix.Name); err != nil {
		return err
	}
	if err := resolveOn(ix); err != nil {
		return err
	}
	switch {
	case ix.Name == s.primary || s.byName[ix.Name] != nil:
		return fmt.Errorf("%w: index name %q is used twice (or is the Primary name)", ErrInvalid, ix.Name)
	case s.sealer != nil && ix.Holds == Whole:
		return fmt.Errorf("%w: index %q holds Whole copies, which would store the properties the Sealer seals unsealed: use KeysOnly or Listed", ErrInvalid, ix.Name)
	case s.large != nil && ix.Holds == Whole:
		return fmt.Errorf("%w: index %q holds Whole copies, which would hold the large values Options.Large keeps in blobs: use KeysOnly or Listed", ErrInvalid, ix.Name)
	}
	switch ix.Holds {
	case Whole, KeysOnly:
		if len(ix.Fields) > 0 {
			return fmt.Errorf("%w: index %q lists Fields but does not hold Listed copies", ErrInvalid, ix.Name)
		}
	case Listed:
		for _, f := range ix.Fields {
			if err := fieldmodel.ValidName(f); err != nil {
				return fmt.Errorf("%w: index %q: field %q cannot be copied: %w", ErrInvalid, ix.Name, f, err)
			}
			if s.sealer != nil && s.sealer.Sealed(f) {
				return fmt.Errorf("%w: index %q: field %q is sealed, so a copy would store it unsealed", ErrInvalid, ix.Name, f)
			}
			if s.large != nil && s.large.Offloads(f) {
				return fmt.Errorf("%w: index %q: field %q is a large value (Options.Large), which copies never hold", ErrInvalid, ix.Name, f)
			}
		}
	default:
		return fmt.Errorf("%w: index %q: unknown Holds %d", ErrInvalid, ix.Name, ix.Holds)
	}
	switch ix.Where {
	case SamePartition:
		if ix.Partition != nil || ix.Table != nil {
			return fmt.Errorf("%w: index %q is SamePartition but sets Partition or Table", ErrInvalid, ix.Name)
		}
	case OtherPartition:
	default:
		return fmt.Errorf("%w: index %q: unknown Where %d", ErrInvalid, ix.Name, ix.Where)
	}
	return nil
}

func validName(what, name string) error {
	if name == "" || len(name) > 32 || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 {
		return fmt.Errorf("%w: %s name %q: 1 to 32 ASCII letters and digits", ErrInvalid, what, name)
	}
	return nil
}

// Entity is an entity as read, with where it came from. Its keys are the
// entity's (RowKey is T's RowKey, the id), never the keys of the row it
// was read from (keys.Join(Primary, id), or a copy's).
type Entity[T any] struct {
	// Entity holds the keys, the primary's ETag when the primary was read
	// (empty for a value read from a copy) and the value (for a Listed copy
	// read without Fetch, only its keys and the listed fields are set).
	table.Entity[T]
	// FromCopy reports that Value was read from an index copy, not from
	// the primary (see Store.Verify).
	FromCopy bool

	copyKey string // the copy's RowKey, for Verify
}

func (s *Store[T]) primaryKey(id string) string { return keys.Join(s.primary, id) }

// row is one index copy: its keys and properties.
type row struct {
	pk, rk string
	props  map[string]any
}

// copyOf returns the copy of entity d (its properties, keys pk and id) in
// index ix, or ok false when the entity has no value in ix.
func (s *Store[T]) copyOf(ix *Index[T], v *T, d table.Dynamic) (r row, ok bool, err error) {
	parts, err := ix.keyOf(v)
	if parts == nil || err != nil {
		return r, false, err
	}
	kp := append(append([]string{ix.Name}, parts...), idParts(ix, d.PartitionKey, d.RowKey)...)
	r.rk = keys.Join(kp...)
	r.pk = copyPartition(ix, d.PartitionKey)
	if err := keys.Validate(r.pk); err != nil {
		return r, false, fmt.Errorf("%w: index %q: partition %q: %w", ErrInvalid, ix.Name, r.pk, err)
	}
	if err := keys.Validate(r.rk); err != nil {
		return r, false, fmt.Errorf("%w: index %q: value %q: %w", ErrInvalid, ix.Name, parts, err)
	}
	switch ix.Holds {
	case Whole:
		r.props = maps.Clone(d.Properties)
	case Listed:
		r.props = make(map[string]any, len(ix.Fields)+1)
		for _, f := range ix.Fields {
			if val, ok := d.Properties[f]; ok {
				r.props[f] = val
			}
		}
	default:
		r.props = make(map[string]any, 1)
	}
	r.props[reserved.CopyRef] = keys.Join(d.PartitionKey, d.RowKey)
	return r, true, nil
}

// entry is an entity encoded for writing: its primary row and its copies
// by index name.
type entry struct {
	pk, id  string
	primary table.Dynamic
	copies  map[string]row
}

// encode checks v and computes its rows; with Options.Large, without the
// values Large may offload (the primary row gets them from prepare).
func (s *Store[T]) encode(v T) (entry, error) {
	if s.large != nil {
		v = s.large.Without(v)
	}
	d, err := table.ToDynamic(v)
	if err != nil {
		return entry{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for name := range d.Properties { // an extra map's: T's fields were checked by New
		if err := fieldmodel.ValidName(name); err != nil {
			return entry{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	if err := keys.Validate(d.PartitionKey); err != nil {
		return entry{}, fmt.Errorf("%w: PartitionKey: %w", ErrInvalid, err)
	}
	e := entry{pk: d.PartitionKey, id: d.RowKey, copies: map[string]row{}}
	for i := range s.indexes {
		ix := &s.indexes[i]
		r, ok, err := s.copyOf(ix, &v, d)
		if err != nil {
			return entry{}, err
		}
		if ok {
			e.copies[ix.Name] = r
		}
	}
	e.primary = table.Dynamic{PartitionKey: d.PartitionKey, RowKey: s.primaryKey(d.RowKey), Properties: d.Properties}
	if err := keys.Validate(e.primary.RowKey); err != nil {
		return entry{}, fmt.Errorf("%w: id %q: %w", ErrInvalid, d.RowKey, err)
	}
	return e, nil
}

// seal applies the Sealer to e's primary row, which e's copies do not
// share. With Options.Large, prepare seals the row it writes instead
// (the row with its pointers).
func (s *Store[T]) seal(ctx context.Context, e *entry) error {
	if s.sealer == nil || s.large != nil {
		return nil
	}
	return s.sealer.Seal(ctx, &e.primary)
}

// decode turns a primary row back into an Entity, and returns the blobs
// of its large values (Options.Large), which it does not read (Value
// leaves them empty; fetch reads them).
func (s *Store[T]) decode(ctx context.Context, d table.Dynamic) (Entity[T], largerows.Blobs, error) {
	parts, err := keys.Split(d.RowKey)
	if err != nil || len(parts) != 2 || parts[0] != s.primary {
		return Entity[T]{}, nil, fmt.Errorf("secondaryindex: row %q/%q is not a %s primary", d.PartitionKey, d.RowKey, s.primary)
	}
	if s.sealer != nil {
		if err := s.sealer.Open(ctx, &d); err != nil {
			return Entity[T]{}, nil, err
		}
	}
	var blobs largerows.Blobs
	if s.large != nil {
		d.Properties = maps.Clone(d.Properties)
		if blobs, err = s.large.Pointers(&d); err != nil {
			return Entity[T]{}, nil, err
		}
	}
	e := Entity[T]{Entity: table.Entity[T]{PartitionKey: d.PartitionKey, RowKey: parts[1], ETag: d.ETag}}
	d.RowKey = parts[1]
	e.Value, err = table.FromDynamic[T](d)
	return e, blobs, err
}

// idParts are the last parts of the RowKey of primary pk/id's copy in
// index ix: none for a unique index, else the id, preceded by pk for an
// OtherPartition index (whose partition may hold the copies of several
// primary partitions), so copies never share a row.
func idParts[T any](ix *Index[T], pk, id string) []string {
	switch {
	case ix.Unique:
		return nil
	case ix.Where == OtherPartition:
		return []string{pk, id}
	default:
		return []string{id}
	}
}

// copyPartition is the partition of primary partition pk's copies in ix.
func copyPartition[T any](ix *Index[T], pk string) string {
	if ix.Where == OtherPartition {
		return ix.Partition(pk)
	}
	return pk
}

// owns reports whether index ix could have written a copy of primary
// pk/id at cpk/crk: valid primary keys, the partition ix keeps pk's copies
// in, a RowKey of ix ending with the primary's idParts.
func (s *Store[T]) owns(ix *Index[T], cpk, crk, pk, id string) bool {
	if keys.Validate(pk) != nil || keys.Validate(s.primaryKey(id)) != nil || copyPartition(ix, pk) != cpk {
		return false
	}
	parts, err := keys.Split(crk)
	tail := idParts(ix, pk, id)
	return err == nil && len(parts) > len(tail) && parts[0] == ix.Name && slices.Equal(parts[len(parts)-len(tail):], tail)
}

// refOf returns the primary that d, a row read as a copy of index ix,
// names; ErrCorrupt unless ix could have written d for it (see owns).
func (s *Store[T]) refOf(ix *Index[T], d table.Dynamic) (pk, id string, err error) {
	ref, _ := d.Properties[reserved.CopyRef].(string)
	parts, err := keys.Split(ref)
	if err == nil && len(parts) == 2 && s.owns(ix, d.PartitionKey, d.RowKey, parts[0], parts[1]) {
		return parts[0], parts[1], nil
	}
	if len(ref) > 64 {
		ref = ref[:64] + "..."
	}
	return "", "", fmt.Errorf("%w: index %q: row %q/%q names primary %q", ErrCorrupt, ix.Name, d.PartitionKey, d.RowKey, ref)
}

// decodeCopy turns d, a copy of index ix, into an Entity (FromCopy): its
// keys from TkRef (checked by refOf), its fields only those ix
// copies (none for KeysOnly, Fields for Listed), so a property added to a
// copy, such as one a Sealer seals, never reaches the Value.
func (s *Store[T]) decodeCopy(ix *Index[T], d table.Dynamic) (Entity[T], error) {
	pk, id, err := s.refOf(ix, d)
	if err != nil {
		return Entity[T]{}, err
	}
	props := map[string]any{}
	switch ix.Holds {
	case Whole:
		props = maps.Clone(d.Properties)
		delete(props, reserved.CopyRef)
	case Listed:
		for _, f := range ix.Fields {
			if v, ok := d.Properties[f]; ok {
				props[f] = v
			}
		}
	}
	v, err := table.FromDynamic[T](table.Dynamic{PartitionKey: pk, RowKey: id, Properties: props})
	return Entity[T]{Entity: table.Entity[T]{PartitionKey: pk, RowKey: id, Value: v}, FromCopy: true, copyKey: d.RowKey}, err
}

// copyTable is the table of ix's copies.
func (s *Store[T]) copyTable(ix *Index[T]) *table.Table[table.Dynamic] {
	if ix.Table != nil {
		return ix.Table
	}
	return s.tbl
}

// sameCopy reports whether two copies are the same row with the same
// content.
func sameCopy(a, b row) bool {
	return a.pk == b.pk && a.rk == b.rk && fmt.Sprint(a.props) == fmt.Sprint(b.props)
}

func (s *Store[T]) indexNamed(name string) (*Index[T], error) {
	ix := s.byName[name]
	if ix == nil {
		return nil, fmt.Errorf("%w: no index named %q", ErrInvalid, name)
	}
	return ix, nil
}

// The operations of this package, for telemetry.
var (
	opInsert    = obs.Write("secondaryindex.Insert")
	opUpdate    = obs.Write("secondaryindex.Update")
	opModify    = obs.Write("secondaryindex.Modify")
	opDelete    = obs.Write("secondaryindex.Delete")
	opRebuild   = obs.Write("secondaryindex.Rebuild")
	opGet       = obs.Read("secondaryindex.Get")
	opList      = obs.Read("secondaryindex.List")
	opListPage  = obs.Read("secondaryindex.ListPage")
	opRangePage = obs.Read("secondaryindex.RangePage")
	// The ...Ops write nothing to the table (the change's transaction
	// does, where it is applied): their spans have no outcome.
	opInsertOps = obs.Read("secondaryindex.InsertOps")
	opUpdateOps = obs.Read("secondaryindex.UpdateOps")
	opModifyOps = obs.Read("secondaryindex.ModifyOps")
	opDeleteOps = obs.Read("secondaryindex.DeleteOps")
	opLookup    = obs.Read("secondaryindex.Lookup")
	opFind      = obs.Read("secondaryindex.Find")
	opRange     = obs.Read("secondaryindex.Range")
	opVerify    = obs.Read("secondaryindex.Verify")
	opCheck     = obs.Read("secondaryindex.Check")
)

// partitionOf is v's PartitionKey, for a span ("" when T cannot give it).
func partitionOf[T any](v *T) string {
	pk, _, _ := fieldmodel.KeysOf(v)
	return pk
}
