package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
)

// ErrEntityType: a stored entity is not of the type expected: of another
// registered type (a Get through the wrong Table), of no registered type, or
// of a version of its type newer than the one registered (written by a
// newer program) or older than the oldest upgrade.
var ErrEntityType = errors.New("entity type")

// defaultTypeProperty is the type property's name unless
// TypesOptions.Property says otherwise: the guide's EntityType.
const defaultTypeProperty = "EntityType"

// Types is the set of entity types one table holds side by side: the
// guide's heterogeneous entity types (Department and Employee entities in
// one partition, read by one query). Each type is registered with a name
// and a version (Register); its writes always record them, and a query
// reads every row into the Go type registered for it. It is safe for
// concurrent use.
//
// An entity's type is recorded the way the guide describes: in a type
// property (defaultTypeProperty, holding the name and version, as
// "Employee.2"; a value without a version, "Employee", is version 1), and
// optionally also as a key prefix (RegisterOptions.Prefix: "EMP_000123"),
// which lets a query select one type by key range and recognises rows that
// other programs wrote without the property. A row's type is its type
// property when it has one, else the registered prefix its key starts
// with, else TypesOptions.Untyped.
//
// Versions: a type registered at version 3 with upgrades from versions 1
// and 2 reads rows of every version as its current Go type: a row of
// version 1 decodes into the first upgrade's input type, and each upgrade
// function takes it one version further. Writes always write the current
// version. Rows are upgraded in storage by writing them (Modify does, with
// Replace), optionally on Get (RegisterOptions.WriteBack), or table-wide by
// Migrate.
type Types struct {
	rows    *Table[any] // reads of any type
	prop    string
	byPK    bool
	untyped string
	dynamic bool

	mu  sync.Mutex // serialises Register
	reg atomic.Pointer[registry]
}

// registry is an immutable snapshot of the registered types.
type registry struct {
	byName   map[string]*entityType
	prefixed []*entityType // with a Prefix (no two overlap)
	back     bool          // some type writes back (RegisterOptions.WriteBack)
}

// TypesOptions configures NewTypes. A nil *TypesOptions means defaults.
type TypesOptions struct {
	// Property names the type property. Default: defaultTypeProperty.
	Property string
	// PartitionKeyPrefix matches the types' Prefix against the
	// PartitionKey instead of the RowKey.
	PartitionKeyPrefix bool
	// Untyped names the registered type of rows that have no type property
	// and no registered key prefix (data written before its types were
	// registered): they read as version 1 of that type. Default (""):
	// such rows are of no type.
	Untyped string
	// UnknownAsDynamic makes Types.Query and Types.Get return rows of no
	// registered type (or of an unregistered version) as a Dynamic holding
	// every stored property. Default (false): such a row is an
	// ErrEntityType error naming it. They are never skipped silently.
	UnknownAsDynamic bool
}

// NewTypes returns an empty set of entity types for the table client c
// talks to; Register adds types.
func NewTypes(c *aztables.Client, opts *TypesOptions) (*Types, error) {
	if c == nil {
		return nil, fmt.Errorf("table.NewTypes: %w: nil *aztables.Client", ErrInvalid)
	}
	if opts == nil {
		opts = &TypesOptions{}
	}
	ts := &Types{prop: opts.Property, byPK: opts.PartitionKeyPrefix, untyped: opts.Untyped, dynamic: opts.UnknownAsDynamic}
	if ts.prop == "" {
		ts.prop = defaultTypeProperty
	}
	if err := validPropertyName(ts.prop); err != nil {
		return nil, fmt.Errorf("table.NewTypes: Property: %w", err)
	}
	if ts.untyped != "" {
		if err := validTypeName(ts.untyped); err != nil {
			return nil, fmt.Errorf("table.NewTypes: Untyped: %w", err)
		}
	}
	a := aboutClient(c)
	ts.rows = &Table[any]{client: c, name: a.name, direct: directOf(a), types: ts, profile: a.resolvedProfile()}
	ts.reg.Store(&registry{byName: map[string]*entityType{}})
	return ts, nil
}

// RegisterOptions configures Register. A nil *RegisterOptions means defaults.
type RegisterOptions struct {
	// Version is the current version, the one T holds and writes write.
	// Default: 1.
	Version int
	// Upgrades take rows of older versions to the current one: one per
	// version from the oldest still stored to Version-1, each taking its
	// version's Go type to the next one's, the last one to T.
	Upgrades []Upgrade
	// Prefix, when set, is the key prefix every entity of the type has
	// (its RowKey's, or PartitionKey's with PartitionKeyPrefix): writes
	// check it, typed queries select the type by key range, and rows
	// without a type property are recognised by it. No registered prefix
	// may start another.
	Prefix string
	// WriteBack makes Get (the type's Table's, and Types.Get for a type
	// whose keys are fields) write a row it upgraded back as the current
	// version: one more round trip, an Update with Replace conditioned on
	// the ETag read, so a concurrent writer is never overwritten (its
	// version stands; so does the old row when the write fails: it reads
	// the same and Migrate upgrades it later). The value returned then
	// carries the new ETag. Queries never write.
	WriteBack bool
}

// Upgrade takes a row of one version of a type to the next version; make
// it with UpgradeFrom.
type Upgrade struct {
	from    int
	in, out reflect.Type
	fn      func(any) (any, error)
	nilFn   bool
}

// UpgradeFrom returns the upgrade of rows of version to version+1: the row
// is decoded into a From (a struct type New accepts, or Dynamic for every
// property), and fn returns its next version. The keys, ETag and Timestamp
// of the result are set from the row after the last upgrade, so fn need
// not copy them. An error from fn fails the read.
func UpgradeFrom[From, To any](version int, fn func(From) (To, error)) Upgrade {
	return Upgrade{from: version, in: reflect.TypeFor[From](), out: reflect.TypeFor[To](), nilFn: fn == nil,
		fn: func(v any) (any, error) { return fn(v.(From)) }}
}

// entityType is one registered type.
type entityType struct {
	name    string
	version int
	prefix  string
	codec   *codec
	ups     []Upgrade
	inCodec []*codec // ups[i].in's codec
	tag     []byte   // `,"EntityType":"Name.N"}`: the discriminator, closing the entity
	tagSize int      // as the service counts it
	selects string   // the default projection: T's, the type property and older versions' properties; "" for every property
	extra   []string // what an explicit projection adds: the type property and older versions' properties
	filter  Filter   // what selects the type's rows on the server; zero when rows are told apart only after reading
	back    bool
	// writeBack is the type's Table's writeBack, for Types.Get: the value
	// and ETag of the row after it.
	writeBack func(ctx context.Context, v any, etag azcore.ETag, writes string) (any, azcore.ETag)
}

// Register adds type T, named name, to ts and returns the Table through
// which to write and read entities of that type. Its writes record the type
// (the type property, "name.version"; and Prefix is checked); its Get reads
// only entities of the type (ErrEntityType otherwise) and its queries only
// return them (selected on the server by the type property or Prefix, and
// checked after reading), upgrading older versions. A typed query's filter
// gains the type's selection: 3 comparisons (type property) or 2 (Prefix)
// of the service's maxFilterComparisons. With a Prefix the selection is the
// key range, so a row of the type stored without the prefix (written by
// another program) is found by Types' queries only. Get with Select reads
// through such a query, so it reports another type's row as ErrNotFound.
//
// Writing a value read from an older version (its Meta records the
// upgrade; T should embed Meta) writes it whole, with Replace, whatever
// the Mode: a merge would label the row current beside its old version's
// properties. A Fields merge or a Merge of a value built from scratch
// cannot know the stored version: merge such values only into rows known
// to be current (Migrate first), or use Modify. A row written whole holds
// exactly T's properties (and T's extra map, if it has one): properties
// that no version's Go type declares are dropped, unless the upgrade
// functions carry them in extra maps.
//
// T must have no property named as the type property, and at most 251
// properties (the type property is one more). A name is 1 to 64 ASCII
// letters, digits, '_' and '-', starting with a letter, and is registered
// once. Configuration errors match ErrInvalidEntity.
func Register[T any](ts *Types, name string, opts *RegisterOptions) (*Table[T], error) {
	fail := func(format string, args ...any) (*Table[T], error) {
		return nil, fmt.Errorf("table.Register %s: %w: %s", name, ErrInvalidEntity, fmt.Sprintf(format, args...))
	}
	if err := validTypeName(name); err != nil {
		return fail("%v", err)
	}
	if opts == nil {
		opts = &RegisterOptions{}
	}
	t, err := New[T](ts.rows.client, nil)
	if err != nil {
		return nil, err
	}
	c := t.codec
	if _, clash := c.byName[ts.prop]; clash {
		return fail("%v has a property named %s, the type property", c.typ, ts.prop)
	}
	if n := Storage.MaxProperties; len(c.fields)+1 > n { // every profile's (a check of the type)
		return fail("%v has %d properties: with the type property, more than the service's %d", c.typ, len(c.fields), n)
	}
	et := &entityType{name: name, version: opts.Version, prefix: opts.Prefix, codec: c, back: opts.WriteBack}
	if et.version == 0 {
		et.version = 1
	}
	if et.version < 1 {
		return fail("version %d: versions start at 1", et.version)
	}
	if err := et.chain(opts.Upgrades); err != nil {
		return fail("%v", err)
	}
	if et.prefix != "" {
		if err := validTypePrefix(et.prefix); err != nil {
			return fail("%v", err)
		}
		if name == ts.untyped {
			return fail("the Untyped type cannot have a Prefix (its untyped rows lack it)")
		}
	}
	value := name + "." + strconv.Itoa(et.version)
	et.tag = append(append(append([]byte(`,"`), ts.prop...), `":"`...), value...)
	et.tag = append(et.tag, `"}`...)
	et.tagSize = 8 + 2*len(ts.prop) + 4 + 2*len(value)
	et.projections(ts.prop)
	switch {
	case et.prefix != "":
		key := "RowKey"
		if ts.byPK {
			key = "PartitionKey"
		}
		et.filter = And(Ge(key, et.prefix), Lt(key, prefixEnd(et.prefix)))
	case name != ts.untyped:
		et.filter = Or(Eq(ts.prop, name), And(Ge(ts.prop, name+"."), Lt(ts.prop, name+"/")))
	}

	ts.mu.Lock()
	defer ts.mu.Unlock()
	old := ts.reg.Load()
	if _, dup := old.byName[name]; dup {
		return fail("already registered")
	}
	reg := &registry{byName: make(map[string]*entityType, len(old.byName)+1), prefixed: slices.Clone(old.prefixed), back: old.back || et.back}
	for n, o := range old.byName {
		reg.byName[n] = o
	}
	reg.byName[name] = et
	if et.prefix != "" {
		for _, o := range reg.prefixed {
			if strings.HasPrefix(o.prefix, et.prefix) || strings.HasPrefix(et.prefix, o.prefix) {
				return fail("prefix %q overlaps %s's %q", et.prefix, o.name, o.prefix)
			}
		}
		reg.prefixed = append(reg.prefixed, et)
	}
	t.types, t.typ = ts, et
	et.writeBack = func(ctx context.Context, v any, etag azcore.ETag, writes string) (any, azcore.ETag) {
		x := v.(T)
		if res, ok := t.writeBack(ctx, &x, etag, writes); ok {
			etag = res.ETag
		}
		return x, etag
	}
	ts.reg.Store(reg)
	return t, nil
}

// chain checks the upgrades (contiguous versions, each type feeding the
// next, the last producing T) and keeps them in version order.
func (et *entityType) chain(ups []Upgrade) error {
	ups = slices.Clone(ups)
	slices.SortFunc(ups, func(a, b Upgrade) int { return a.from - b.from })
	for i, u := range ups {
		switch {
		case u.fn == nil || u.nilFn:
			return fmt.Errorf("upgrade from version %d: nil function", u.from)
		case u.from < 1:
			return fmt.Errorf("upgrade from version %d: versions start at 1", u.from)
		case i > 0 && u.from != ups[i-1].from+1:
			return fmt.Errorf("upgrades from versions %d and %d: not consecutive (one upgrade per version)", ups[i-1].from, u.from)
		case i > 0 && u.in != ups[i-1].out:
			return fmt.Errorf("upgrade from version %d takes a %v, but the one before returns a %v", u.from, u.in, ups[i-1].out)
		}
		c, err := codecFor(u.in)
		if err != nil {
			return fmt.Errorf("upgrade from version %d: %w", u.from, err)
		}
		et.inCodec = append(et.inCodec, c)
	}
	if n := len(ups); n > 0 {
		switch last := ups[n-1]; {
		case last.from != et.version-1:
			return fmt.Errorf("the last upgrade is from version %d, not from %d (the version before %d)", last.from, et.version-1, et.version)
		case last.out != et.codec.typ:
			return fmt.Errorf("the last upgrade returns a %v, not a %v", last.out, et.codec.typ)
		}
	}
	et.ups = ups
	return nil
}

// projections computes what queries of the type transfer: T's properties,
// the type property, and what older versions' types read (every property
// when one of them, or T, has an extra map).
func (et *entityType) projections(prop string) {
	all := et.codec.extra != nil
	et.extra = []string{prop}
	for _, c := range et.inCodec {
		all = all || c.extra != nil
		for _, f := range c.fields {
			if !slices.Contains(et.extra, f.name) {
				et.extra = append(et.extra, f.name)
			}
		}
	}
	if all {
		et.extra = nil
		return
	}
	sel := slices.Clone(et.codec.selects)
	for _, n := range et.extra {
		if !slices.Contains(sel, n) {
			sel = append(sel, n)
		}
	}
	et.selects = strings.Join(sel, ",")
}

// resolve returns the type and version of a scanned entity. For a row of
// no registered type it returns a nil type and an ErrEntityType naming
// what was stored; for a version the type cannot read, the type and that
// error.
func (ts *Types) resolve(props []property) (*entityType, int, error) {
	reg := ts.reg.Load()
	var key *property
	for i := range props {
		p := &props[i]
		switch name := string(p.name); {
		case name == ts.prop && p.value.kind == 's' && !p.value.esc:
			return reg.lookup(p.value.raw)
		case name == ts.prop && p.value.kind == 's':
			return reg.lookup([]byte(stringOf(p.value)))
		case name == ts.prop && p.value.kind != 'z':
			return nil, 0, fmt.Errorf("%w: property %s is not a string", ErrEntityType, ts.prop)
		case ts.byPK && name == "PartitionKey" || !ts.byPK && name == "RowKey":
			key = p
		}
	}
	if key != nil && len(reg.prefixed) > 0 {
		k := stringOf(key.value)
		for _, et := range reg.prefixed {
			if strings.HasPrefix(k, et.prefix) {
				return et, 1, et.readable(1)
			}
		}
	}
	if et := reg.byName[ts.untyped]; et != nil {
		return et, 1, et.readable(1)
	}
	return nil, 0, fmt.Errorf("%w: the entity has no %s property and no registered key prefix", ErrEntityType, ts.prop)
}

// lookup resolves a type property's value, "Name.N" or "Name" (without
// allocating, on this path taken for every row).
func (reg *registry) lookup(value []byte) (*entityType, int, error) {
	name, ver, dotted := bytes.Cut(value, []byte{'.'})
	version := 1
	if dotted {
		version = 0
		for _, d := range ver {
			if d < '0' || d > '9' || version > 1e6 {
				version = 0
				break
			}
			version = version*10 + int(d-'0')
		}
	}
	et := reg.byName[string(name)]
	switch {
	case version < 1:
		// A registered type's row stays its type's (and an error), so a
		// typed query reports it instead of skipping it.
		return et, 0, fmt.Errorf("%w: type %q has no valid version", ErrEntityType, value)
	case et == nil:
		return nil, 0, fmt.Errorf("%w: type %q is not registered", ErrEntityType, value)
	}
	return et, version, et.readable(version)
}

// readable reports whether rows of version can be read as the type.
func (et *entityType) readable(version int) error {
	switch {
	case version > et.version:
		return fmt.Errorf("%w: version %d of %s is newer than the registered %d (written by a newer program)", ErrEntityType, version, et.name, et.version)
	case version < et.version && (len(et.ups) == 0 || version < et.ups[0].from):
		return fmt.Errorf("%w: version %d of %s has no upgrade to %d", ErrEntityType, version, et.name, et.version)
	}
	return nil
}

// decode sets v (an addressable value of the type's Go type) from a row of
// the given version, upgrading it.
func (et *entityType) decode(props []property, version int, v reflect.Value, etag azcore.ETag, keys *[3]string, prop string) error {
	if version == et.version {
		return et.codec.decodeProps(props, v, etag, keys, true, prop)
	}
	i := version - et.ups[0].from
	x := reflect.New(et.ups[i].in).Elem()
	if err := et.inCodec[i].decodeProps(props, x, etag, keys, true, prop); err != nil {
		return fmt.Errorf("version %d of %s: %w", version, et.name, err)
	}
	cur := x.Interface()
	for _, u := range et.ups[i:] {
		var err error
		if cur, err = u.fn(cur); err != nil {
			return fmt.Errorf("upgrading %s from version %d: %w", et.name, u.from, err)
		}
	}
	v.Set(reflect.ValueOf(cur))
	if err := et.codec.decodeProps(props, v, etag, nil, false, prop); err != nil {
		return err
	}
	if et.codec.meta != nil {
		metaOf(v, et.codec.meta).upgraded = true
	}
	return nil
}

// decodeAny returns a scanned row as the value of its registered type (a
// Dynamic for rows of no registered type, when so configured).
func (ts *Types) decodeAny(props []property, etag azcore.ETag, keys *[3]string) (any, bool, error) {
	et, version, err := ts.resolve(props)
	if err != nil {
		if !ts.dynamic {
			return nil, false, err
		}
		c, _ := codecFor(dynamicType)
		var d Dynamic
		return d, false, c.decodeProps(props, reflect.ValueOf(&d).Elem(), etag, keys, true, "")
	}
	v := reflect.New(et.codec.typ).Elem()
	if err := et.decode(props, version, v, etag, keys, ts.prop); err != nil {
		return nil, false, err
	}
	return v.Interface(), version != et.version, nil
}

// kindOf types a filter's literal for a property of the registered types:
// by their field's kind when every type with the property agrees, else
// (no type has it, or two disagree) by the literal's own Go type.
func (ts *Types) kindOf(name string) (kind, bool) {
	var k kind
	for _, et := range ts.reg.Load().byName {
		if i, ok := et.codec.byName[name]; ok {
			if fk := et.codec.fields[i].kind; k != 0 && fk != k {
				return 0, false
			} else {
				k = fk
			}
		}
	}
	return k, k != 0
}

// Query returns the query's entities, each as a value of its registered Go
// type (T, not *T), for a type switch; rows of no registered type are a
// Dynamic (UnknownAsDynamic) or an ErrEntityType error that ends the
// sequence. Rows under "~tk~" are skipped unless IncludeReserved.
// Fetching is as Table.Query's (one page ahead); the default projection is
// every property, and filters type their literals by the registered types'
// fields.
//
//	for v, err := range types.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
//		switch e := v.(type) {
//		case Department: ...
//		case Employee: ...
//		}
//	}
func (ts *Types) Query(ctx context.Context, q *Query) iter.Seq2[any, error] {
	return ts.rows.Query(ctx, q)
}

// QueryPage fetches one page of a mixed query (see Query and
// Table.QueryPage): one round trip.
func (ts *Types) QueryPage(ctx context.Context, q *Query) (Page[any], error) {
	return ts.rows.QueryPage(ctx, q)
}

// Get reads one entity of any registered type: one round trip (two with a
// write-back, see RegisterOptions.WriteBack). ErrNotFound when it does not
// exist.
func (ts *Types) Get(ctx context.Context, partitionKey, rowKey string) (Entity[any], error) {
	if err := ts.rows.checkKeys("get", partitionKey, rowKey); err != nil {
		return Entity[any]{}, err
	}
	reg := ts.reg.Load()
	v, etag, writes, upgraded, err := ts.rows.get(ctx, "get", partitionKey, rowKey, reg.back)
	if err != nil {
		return Entity[any]{}, err
	}
	if upgraded && reg.back {
		for _, et := range reg.byName {
			if et.back && et.codec.typ == reflect.TypeOf(v) {
				v, etag = et.writeBack(ctx, v, etag, writes)
				break
			}
		}
	}
	return Entity[any]{PartitionKey: partitionKey, RowKey: rowKey, ETag: etag, Value: v}, nil
}

// validTypeName checks a registered type's name.
func validTypeName(name string) error {
	if name == "" || len(name) > 64 {
		return errors.New("a type name has 1 to 64 characters")
	}
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '_' || r == '-')) {
			return fmt.Errorf("%q: a type name is ASCII letters, digits, '_' and '-', starting with a letter", name)
		}
	}
	return nil
}

// validTypePrefix checks a key prefix: printable ASCII valid in a key,
// without '~' (so it never overlaps "~tk~", and its range's end is
// the prefix with its last byte plus one).
func validTypePrefix(p string) error {
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] >= 0x7e {
			return fmt.Errorf("prefix %q: only printable ASCII before '~'", p)
		}
	}
	if err := keys.Validate(p); err != nil {
		return fmt.Errorf("prefix %q: %w", p, err)
	}
	return nil
}

// prefixEnd is the first string after every string with prefix p (ASCII,
// not ending in 0x7e or later: validTypePrefix).
func prefixEnd(p string) string {
	return p[:len(p)-1] + string(rune(p[len(p)-1]+1))
}
