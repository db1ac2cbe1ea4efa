package largeentity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

const (
	// defaultThreshold is Options.Threshold's default: values of more
	// than 32 KiB (as the service counts them: strings at 2 bytes per
	// UTF-16 code unit) go to blobs. Smaller values are cheaper inline
	// (no second round trip); larger ones crowd the entity's 1 MiB and
	// slow every query that reads them.
	defaultThreshold = 32 << 10
	// defaultGrace is Options.Grace's default.
	defaultGrace = time.Hour
	// defaultConcurrency is Options.Concurrency's default.
	defaultConcurrency = 8
	// tag is the struct tag that chooses a field to offload:
	// `largeentity:"offload"` offloads values over Options.Threshold,
	// `largeentity:"always"` every non-empty value.
	tag = "largeentity"
	// MaxValueSize is the largest value a Store offloads, in bytes of
	// blob content: 256 MiB, what one request (Put Blob) uploads, so that
	// every upload is a single create-if-absent. A write of a larger
	// value is refused before the network (ErrInvalid and
	// table.ErrTooLarge), and a read refuses a pointer that records a
	// larger size, or a blob that holds more, before reading its content
	// (ErrCorrupt and table.ErrTooLarge): no read allocates more than
	// this per value.
	MaxValueSize = 256 << 20
)

var (
	// ErrInvalid is the sentinel for a request rejected before the
	// network: a nil table or container, bad Options, a field that cannot
	// be offloaded, a property name under "Tk", a
	// T without keys (no key fields, no Options.Keys) on a write, an
	// entity the table package would refuse (also its sentinel:
	// table.ErrInvalidEntity, table.ErrTooLarge), a value larger than
	// MaxValueSize (also table.ErrTooLarge), and keys the service would
	// refuse or that this package cannot take, an empty PartitionKey
	// among them (also table.ErrInvalidKey). It matches table.ErrInvalid.
	ErrInvalid = invalid.New("largeentity: invalid request")
	// ErrCorrupt: an offloaded value could not be read as its entity
	// describes it: the blob's content does not have the recorded SHA-256
	// or size, the blob is missing while the entity still points at it,
	// or the pointer is malformed. Reads never return such data.
	ErrCorrupt = errors.New("largeentity: an offloaded value does not match its entity's pointer")
	// ErrForeignBlob: an entity's pointer names a blob that this Store
	// never writes for that entity's keys and property: a pointer copied
	// from another entity (by a tenant that can write this row but not the
	// other), or naming any other blob of the container. Reads refuse it
	// without reading the blob, Delete and Sweep never delete it. Errors
	// that match it also match ErrCorrupt.
	ErrForeignBlob = errors.New("largeentity: a pointer names a blob that is not its entity's")
	// ErrGraceExceeded: a write uploaded its blobs but did not send the
	// entity, because half of Options.Grace had passed since the uploads
	// began and Sweep may treat blobs that old as orphans. Nothing
	// references the blobs (the write deletes them, or Sweep does); the
	// write was not applied: try again.
	ErrGraceExceeded = errors.New("largeentity: half the grace period passed between the blob uploads and the entity write; not applied")
)

// Options configures a Store. A nil *Options means defaults.
type Options[T any] struct {
	// Keys returns the keys an entity is stored under, as table.WithKeys
	// does for a table: for a T without key fields, or keys computed
	// from other fields. Default: T's key fields ([fieldmodel.KeysOf]). A
	// Store whose T has neither can read (Get, Range) and Delete, but its
	// writes fail with ErrInvalid.
	Keys func(*T) (pk, rk string)
	// Prefix names the blobs: <Prefix>/<32 hex digits of the entity's
	// keys' hash>/<property>/<32 random hex digits>. Default: the table's
	// name. Reads follow only pointers to names of that form
	// (ErrForeignBlob otherwise): every Store of a table must use the same
	// Prefix. Sweep treats every blob under Prefix as this table's: never
	// give two tables the same Prefix in one container.
	Prefix string
	// Fields names properties of T to offload above Threshold, as fields
	// tagged `largeentity:"offload"` are (for types you cannot tag). Each
	// must be a []byte, string or `table:",json"` field.
	Fields []string
	// Threshold is the size above which a chosen value goes to a blob, in
	// bytes as the service counts them (strings and JSON at 2 bytes per
	// UTF-16 code unit), 1 to the largest value of the table's
	// [table.Profile] (MaxValueSize, 64 KiB). Default: 32 KiB.
	// Whatever the threshold, values are also offloaded, largest first,
	// while the entity would exceed the profile's entity size (1 MiB on
	// Table Storage, 2 MB of JSON on Cosmos DB).
	Threshold int
	// Concurrency is the most blob reads or writes in flight for one call
	// (the values of one entity, the entities of a Range, the entities of
	// a Sweep). Default: 8.
	Concurrency int
	// Grace is how old an unreferenced blob must be before Sweep deletes
	// it, and twice the longest a write may take from its first blob
	// upload to sending its entity (see ErrGraceExceeded): it must exceed
	// twice the clock skew between the machines that write and the one
	// that sweeps, plus the longest request. Use the same Grace wherever
	// the table is written. Default: one hour.
	Grace time.Duration
	// Retry is the policy for Modify's conflicts and for Delete with
	// azcore.ETagAny when the entity changes between its read and its
	// delete. Default: retry.Default.
	Retry *retry.Policy
	// Now is the clock that measures Grace. Default: time.Now.
	Now func() time.Time
	// Telemetry receives the spans, metrics and log records of the
	// Store's operations. Default (nil): the global OpenTelemetry
	// providers and slog.Default().
	Telemetry *table.Telemetry
}

// Store is the guide's large entity pattern over a table: entities of
// type T (a struct) whose chosen []byte, string or JSON fields are kept in
// blobs when they are large, the entity holding each blob's name, size and
// SHA-256. It is safe for concurrent use.
type Store[T any] struct {
	tbl       *table.Table[table.Dynamic]
	blobs     *container.Client
	keys      func(*T) (pk, rk string) // fieldmodel.KeyFunc; nil: keysErr
	keysErr   error
	extra     bool // T has an extra map: its names are checked on writes
	prefix    string
	chosen    []*field          // the fields offloaded by writes
	readable  map[string]*field // every []byte, string or json field: what a read can resolve
	threshold int
	conc      int
	grace     time.Duration
	retry     retry.Policy
	now       func() time.Time
	obs       *obs.Obs

	hook func(step string) error // tests: a crash at a step boundary
}

// fieldKind is how an offloaded field's value becomes a blob's content.
type fieldKind uint8

const (
	kBytes  fieldKind = iota + 1 // []byte: the bytes
	kString                      // string: its UTF-8
	kJSON                        // `table:",json"`: encoding/json, as the table codec stores it
)

// field is a property of T whose value can live in a blob.
type field struct {
	name   string // the property name
	index  []int
	kind   fieldKind
	typ    reflect.Type
	always bool // offloaded whatever its size
}

// Blob describes an offloaded value.
type Blob struct {
	// Property is the property whose value the blob holds.
	Property string `json:"-"`
	// Name is the blob's name in the container.
	Name string `json:"blob"`
	// Size is the value's length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the value's SHA-256, in lower-case hex.
	SHA256 string `json:"sha256"`
}

// Entity is an entity as read: the core's envelope (keys, ETag, and the
// value with every offloaded value read back, or only the properties
// selected) and the blobs it points at.
type Entity[T any] struct {
	table.Entity[T]
	// Blobs are the offloaded values the entity points at (those read,
	// when a projection skipped some), by property name order.
	Blobs []Blob
}

// Result is the outcome of a successful write.
type Result struct {
	// Result is the entity write's: its new ETag, and whether a lost
	// response was verified.
	table.Result
	// Blobs are the offloaded values the entity now points at.
	Blobs []Blob
}

// GetOptions configures Get, Range and RangePage. A nil *GetOptions means defaults.
type GetOptions struct {
	// Select limits the properties read (server-side projection), by
	// property name. A selection without offloaded properties costs no
	// blob read. Default (nil): every property, every offloaded value.
	Select []string
	// PageSize is the most entities Range and RangePage read per round
	// trip, 1 to table.MaxPageSize (another is ErrInvalid, nothing sent).
	// Default (0): 1,000, the service's page.
	PageSize int
}

// New returns a Store of entities of type T (a struct) in tbl's table,
// with their large values in the container blobs; both are required, and
// a nil opts means defaults. It sends nothing. It fails with ErrInvalid
// for a nil table or container, bad Options, a chosen field that is not a
// []byte, string or `table:",json"` field, a property named under
// "Tk", or a T the table package cannot store
// (also that package's error). Writes take an entity's keys from T's key
// fields, or from Options.Keys; reads fill T's key fields with the
// entity's keys and its Meta with the ETag and Timestamp.
func New[T any](tbl *table.Table[table.Dynamic], blobs *container.Client, opts *Options[T]) (*Store[T], error) {
	if tbl == nil || blobs == nil {
		return nil, fmt.Errorf("%w: a table and a blob container are required", ErrInvalid)
	}
	var o Options[T]
	if opts != nil {
		o = *opts
	}
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a struct type", ErrInvalid, typ)
	}
	s := &Store[T]{tbl: reserved.Properties(tbl), blobs: blobs, prefix: o.Prefix, threshold: o.Threshold, conc: o.Concurrency,
		grace: o.Grace, retry: retry.Default, now: o.Now, readable: map[string]*field{}, obs: obs.New((*obs.Config)(o.Telemetry))}
	s.keys, s.keysErr = fieldmodel.KeyFunc(o.Keys)
	if s.prefix == "" {
		s.prefix = tbl.Name()
	}
	if err := checkPrefix(s.prefix); err != nil {
		return nil, err
	}
	switch {
	case s.threshold == 0:
		s.threshold = defaultThreshold
	case s.threshold < 0 || s.threshold > tbl.Profile().MaxValueSize:
		return nil, fmt.Errorf("%w: Threshold %d outside 1..%d", ErrInvalid, s.threshold, tbl.Profile().MaxValueSize)
	}
	if s.conc == 0 {
		s.conc = defaultConcurrency
	} else if s.conc < 0 {
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrInvalid, s.conc)
	}
	if s.grace == 0 {
		s.grace = defaultGrace
	} else if s.grace < 0 {
		return nil, fmt.Errorf("%w: Grace %v is negative", ErrInvalid, s.grace)
	}
	if o.Retry != nil {
		s.retry = *o.Retry
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.addFields(o.Fields); err != nil {
		return nil, err
	}
	if len(s.chosen) == 0 {
		return nil, fmt.Errorf("%w: %v has no field to offload: tag one `%s:\"offload\"` or name it in Options.Fields", ErrInvalid, typ, tag)
	}
	return s, nil
}

// checkPrefix accepts blob name prefixes that make valid, unambiguous
// names.
func checkPrefix(p string) error {
	if len(p) > 512 || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.HasSuffix(p, ".") || strings.Contains(p, "//") {
		return fmt.Errorf("%w: Prefix %q: at most 512 characters, not starting or ending with '/', not ending with '.', no empty segment", ErrInvalid, p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' || r == '?' || r == '#' {
			return fmt.Errorf("%w: Prefix %q contains %q", ErrInvalid, p, r)
		}
	}
	return nil
}

// addFields reads T's fields as the table codec maps them
// (the mapping of [table.Table]), records the []byte, string and json properties a
// read can resolve, chooses those tagged or named in Options.Fields, and
// takes T's keys from its key fields unless Options.Keys gives them.
func (s *Store[T]) addFields(names []string) error {
	typ := reflect.TypeFor[T]()
	fields, err := fieldmodel.Of[T]()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	named := map[string]bool{}
	for _, n := range names {
		named[n] = true
	}
	for _, tf := range fields {
		sf := typ.FieldByIndex(tf.Index)
		name := tf.Property
		f := &field{name: name, index: tf.Index, typ: tf.Type}
		switch {
		case tf.Role == fieldmodel.Extra:
			s.extra = true
			name = tf.Name
		case tf.Role != fieldmodel.Property:
			name = tf.Name
		case tf.JSON:
			f.kind = kJSON
		case tf.Type.Kind() == reflect.Slice && tf.Type.Elem().Kind() == reflect.Uint8:
			f.kind = kBytes
		case tf.Type.Kind() == reflect.String && !tf.GUID:
			f.kind = kString
		}
		if tf.Role == fieldmodel.Property {
			if err := fieldmodel.ValidName(name); err != nil {
				return fmt.Errorf("%w: %v.%s: %w", ErrInvalid, typ, tf.Name, err)
			}
		}
		mode, tagged := sf.Tag.Lookup(tag)
		choose := tagged || named[name]
		delete(named, name)
		switch {
		case tagged && mode != "offload" && mode != "always":
			return fmt.Errorf("%w: %v.%s: tag %s:%q, want \"offload\" or \"always\"", ErrInvalid, typ, tf.Name, tag, mode)
		case choose && f.kind == 0:
			return fmt.Errorf("%w: %v.%s: only []byte, string and `table:\",json\"` fields can be offloaded", ErrInvalid, typ, tf.Name)
		case f.kind == 0:
			continue
		case len(reserved.BlobPointerPrefix)+len(name) > fieldmodel.MaxNameLength:
			if choose {
				return fmt.Errorf("%w: %v.%s: property name %q is too long for its pointer property", ErrInvalid, typ, tf.Name, name)
			}
			continue
		}
		f.always = mode == "always"
		s.readable[name] = f
		if choose {
			s.chosen = append(s.chosen, f)
		}
	}
	for n := range named {
		return fmt.Errorf("%w: Options.Fields names %q, which %v has no []byte, string or json field for", ErrInvalid, n, typ)
	}
	return nil
}

// keysOf returns the keys v is stored under, checked as checkKeys does.
func (s *Store[T]) keysOf(op string, v *T) (pk, rk string, err error) {
	if s.keys == nil {
		return "", "", fmt.Errorf("largeentity: %s: %w", op, invalid.Mark(ErrInvalid, s.keysErr))
	}
	pk, rk = s.keys(v)
	return pk, rk, checkKeys(op, pk, rk)
}

// pointerProperty is the reserved property holding name's pointer.
func pointerProperty(name string) string { return reserved.BlobPointerPrefix + name }

// keyHash names an entity's directory of blobs: 32 hex digits of the
// SHA-256 of its keys.
func keyHash(pk, rk string) string {
	h := sha256.Sum256([]byte(pk + "\x00" + rk))
	return hex.EncodeToString(h[:16])
}

// blobDir is the name prefix of every blob of property prop of entity
// (pk, rk) under prefix.
func blobDir(prefix, pk, rk, prop string) string {
	return prefix + "/" + keyHash(pk, rk) + "/" + prop + "/"
}

// idLen is the length of a blob name's write-unique id: 32 hex digits.
const idLen = 32

// blobName is a fresh, write-unique name for a value of property prop of
// entity (pk, rk).
func (s *Store[T]) blobName(pk, rk, prop string) string {
	var id [idLen / 2]byte
	_, _ = rand.Read(id[:])
	return blobDir(s.prefix, pk, rk, prop) + hex.EncodeToString(id[:])
}

// ownName reports whether name is one blobName gives a value of property
// prop of entity (pk, rk) under prefix: its directory, then 32 lower-case
// hex digits.
func ownName(prefix, pk, rk, prop, name string) bool {
	id, ok := strings.CutPrefix(name, blobDir(prefix, pk, rk, prop))
	return ok && isHex(id, idLen)
}

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// checkKeys validates the keys before the network. Its errors match
// ErrInvalid and table.ErrInvalidKey.
func checkKeys(op, pk, rk string) error {
	if err := fieldmodel.CheckKeys(pk, rk); err != nil {
		return fmt.Errorf("largeentity: %s: %w", op, invalid.Mark(ErrInvalid, err))
	}
	return nil
}

// storedSize is the size of a string as the service counts it.
func storedSize(s string) int {
	n := 0
	for _, r := range s {
		n += 2 * utf16.RuneLen(r)
	}
	return n
}

// content returns the blob content of f's value in v and its size inline
// (as the service counts it); ok is false for a value with nothing to
// offload (a nil or empty []byte, an empty string, JSON null).
func (f *field) content(v reflect.Value) (b []byte, inline int, ok bool, err error) {
	fv := v.FieldByIndex(f.index)
	switch f.kind {
	case kBytes:
		b = fv.Bytes()
		return b, len(b), len(b) > 0, nil
	case kString:
		s := fv.String()
		return []byte(s), storedSize(s), s != "", nil
	}
	b, err = json.Marshal(fv.Interface())
	if err != nil {
		return nil, 0, false, err
	}
	return b, storedSize(string(b)), string(b) != "null", nil
}

// set stores content b into f's field of v.
func (f *field) set(v reflect.Value, b []byte) error {
	fv := v.FieldByIndex(f.index)
	switch f.kind {
	case kBytes:
		fv.SetBytes(b)
	case kString:
		fv.SetString(string(b))
	default:
		p := reflect.New(f.typ)
		if err := json.Unmarshal(b, p.Interface()); err != nil {
			return err
		}
		fv.Set(p.Elem())
	}
	return nil
}

// encodeKey and decodeKey carry keys in blob metadata (ASCII only).
func encodeKey(k string) string { return base64.RawURLEncoding.EncodeToString([]byte(k)) }

func decodeKey(k string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(k)
	return string(b), err == nil
}

// The operations of this package, for telemetry.
var (
	opInsert    = obs.Write("largeentity.Insert")
	opUpdate    = obs.Write("largeentity.Update")
	opModify    = obs.Write("largeentity.Modify")
	opDelete    = obs.Write("largeentity.Delete")
	opSweep     = obs.Write("largeentity.Sweep")
	opUpsert    = obs.Write("largeentity.Upsert")
	opGet       = obs.Read("largeentity.Get")
	opRange     = obs.Read("largeentity.Range")
	opRangePage = obs.Read("largeentity.RangePage")
	// The ...Ops and Prepare write no entity (the change's transaction
	// does, where it is applied): their spans have no outcome.
	opInsertOps = obs.Read("largeentity.InsertOps")
	opUpdateOps = obs.Read("largeentity.UpdateOps")
	opPrepare   = obs.Read("largeentity.Prepare")
	opFetch     = obs.Read("largeentity.Fetch")
)

// partitionOf is v's PartitionKey, for a span ("" when the Store cannot
// give it).
func (s *Store[T]) partitionOf(v *T) string {
	if s.keys == nil {
		return ""
	}
	pk, _ := s.keys(v)
	return pk
}
