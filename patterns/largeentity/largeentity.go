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
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

const (
	// DefaultThreshold is Options.Threshold's default: values of more
	// than 32 KiB (as the service counts them: strings at 2 bytes per
	// UTF-16 code unit) go to blobs. Smaller values are cheaper inline
	// (no second round trip); larger ones crowd the entity's 1 MiB and
	// slow every query that reads them.
	DefaultThreshold = 32 << 10
	// DefaultGrace is Options.Grace's default.
	DefaultGrace = time.Hour
	// DefaultConcurrency is Options.Concurrency's default.
	DefaultConcurrency = 8
	// PointerPrefix starts the name of the reserved property that holds
	// the pointer of an offloaded value: property Photo's blob is named in
	// property TkBlobPhoto, as JSON {"blob":name,"size":n,"sha256":hex}.
	// Property names that start with it are refused in T.
	PointerPrefix = "TkBlob"
	// Tag is the struct tag that chooses a field to offload:
	// `largeentity:"offload"` offloads values over Options.Threshold,
	// `largeentity:"always"` every non-empty value.
	Tag = "largeentity"
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
	// network: bad Options, a field that cannot be offloaded, a reserved
	// property name, a value larger than MaxValueSize (also
	// table.ErrTooLarge), and keys the service would refuse or that this
	// package cannot take, an empty PartitionKey among them (also
	// table.ErrInvalidKey). Entities the service would refuse are the
	// table package's sentinels.
	ErrInvalid = errors.New("largeentity: invalid request")
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

// Options configures a Store.
type Options struct {
	// Blobs is the container for the offloaded values. Required.
	Blobs *container.Client
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
	// UTF-16 code unit), 1 to table.MaxValueSize (64 KiB). Default:
	// DefaultThreshold. Whatever the threshold, values are also offloaded,
	// largest first, while the entity would exceed 1 MiB.
	Threshold int
	// Concurrency is the most blob reads or writes in flight for one call
	// (the values of one entity, the entities of a Range, the entities of
	// a Sweep). Default: DefaultConcurrency.
	Concurrency int
	// Grace is how old an unreferenced blob must be before Sweep deletes
	// it, and twice the longest a write may take from its first blob
	// upload to sending its entity (see ErrGraceExceeded): it must exceed
	// twice the clock skew between the machines that write and the one
	// that sweeps, plus the longest request. Use the same Grace wherever
	// the table is written. Default: DefaultGrace.
	Grace time.Duration
	// Retry is the policy for Modify's conflicts and for Delete with
	// azcore.ETagAny when the entity changes between its read and its
	// delete. Default: retry.Default.
	Retry *retry.Policy
	// Now is the clock that measures Grace. Default: time.Now.
	Now func() time.Time
}

// Store is the guide's large entity pattern over a table: entities of
// type T (a struct) whose chosen []byte, string or JSON fields are kept in
// blobs when they are large, the entity holding each blob's name, size and
// SHA-256. It is safe for concurrent use.
type Store[T any] struct {
	tbl       *table.Table[table.Dynamic]
	blobs     *container.Client
	prefix    string
	chosen    []*field          // the fields offloaded by writes
	readable  map[string]*field // every []byte, string or json field: what a read can resolve
	threshold int
	conc      int
	grace     time.Duration
	retry     retry.Policy
	now       func() time.Time

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

// Entity is an entity as read.
type Entity[T any] struct {
	// Value is the entity with every offloaded value read back (or only
	// the properties selected).
	Value T
	// ETag is the entity's version; pass it to Update or Delete.
	ETag azcore.ETag
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

// GetOptions configures Get and Range. A nil *GetOptions means defaults.
type GetOptions struct {
	// Select limits the properties read (server-side projection), by
	// property name. A selection without offloaded properties costs no
	// blob read. Default (nil): every property, every offloaded value.
	Select []string
}

// New returns a Store of entities of type T (a struct) in tbl's table,
// with their large values in opts.Blobs. It sends nothing. It fails with
// ErrInvalid for bad Options, a chosen field that is not a []byte, string
// or `table:",json"` field, or a property named with PointerPrefix, and
// with the table package's error when T cannot be stored. T's key fields,
// if any, are ignored on writes (the calls take the keys) and receive the
// entity's keys on reads; its Meta receives the ETag and Timestamp.
func New[T any](tbl *table.Table[table.Dynamic], opts *Options) (*Store[T], error) {
	if tbl == nil || opts == nil || opts.Blobs == nil {
		return nil, fmt.Errorf("%w: a table and Options with Blobs are required", ErrInvalid)
	}
	typ := reflect.TypeFor[T]()
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a struct type", ErrInvalid, typ)
	}
	var zero T
	if _, err := table.ToDynamic(zero); err != nil {
		return nil, err
	}
	s := &Store[T]{tbl: reserved.Properties(tbl), blobs: opts.Blobs, prefix: opts.Prefix, threshold: opts.Threshold, conc: opts.Concurrency,
		grace: opts.Grace, retry: retry.Default, now: opts.Now, readable: map[string]*field{}}
	if s.prefix == "" {
		s.prefix = tbl.Name()
	}
	if err := checkPrefix(s.prefix); err != nil {
		return nil, err
	}
	switch {
	case s.threshold == 0:
		s.threshold = DefaultThreshold
	case s.threshold < 0 || s.threshold > table.MaxValueSize:
		return nil, fmt.Errorf("%w: Threshold %d outside 1..%d", ErrInvalid, s.threshold, table.MaxValueSize)
	}
	if s.conc == 0 {
		s.conc = DefaultConcurrency
	} else if s.conc < 0 {
		return nil, fmt.Errorf("%w: Concurrency %d is negative", ErrInvalid, s.conc)
	}
	if s.grace == 0 {
		s.grace = DefaultGrace
	} else if s.grace < 0 {
		return nil, fmt.Errorf("%w: Grace %v is negative", ErrInvalid, s.grace)
	}
	if opts.Retry != nil {
		s.retry = *opts.Retry
	}
	if s.now == nil {
		s.now = time.Now
	}
	named := map[string]bool{}
	for _, n := range opts.Fields {
		named[n] = true
	}
	if err := s.addFields(typ, nil, named); err != nil {
		return nil, err
	}
	for n := range named {
		return nil, fmt.Errorf("%w: Options.Fields names %q, which %v has no []byte, string or json field for", ErrInvalid, n, typ)
	}
	if len(s.chosen) == 0 {
		return nil, fmt.Errorf("%w: %v has no field to offload: tag one `%s:\"offload\"` or name it in Options.Fields", ErrInvalid, typ, Tag)
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

// addFields walks T's fields as the table codec names them (the `table`
// tag's name, else the field's; embedded structs flattened; `table:"-"`
// skipped), records those a read can resolve, and chooses the tagged and
// named ones.
func (s *Store[T]) addFields(t reflect.Type, parent []int, named map[string]bool) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		index := append(slices.Clone(parent), i)
		tag := sf.Tag.Get("table")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || sf.Type == reflect.TypeFor[table.Meta]() {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && name == "" && sf.Type != reflect.TypeFor[time.Time]() {
			if err := s.addFields(sf.Type, index, named); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.HasPrefix(name, PointerPrefix) {
			return fmt.Errorf("%w: %v.%s: property names starting with %q are reserved", ErrInvalid, t, sf.Name, PointerPrefix)
		}
		f := &field{name: name, index: index, typ: sf.Type}
		switch o := strings.Split(opts, ","); {
		case slices.Contains(o, "pk"), slices.Contains(o, "rk"), slices.Contains(o, "extra"),
			name == "PartitionKey", name == "RowKey", name == "Timestamp":
			f.kind = 0
		case slices.Contains(o, "json"):
			f.kind = kJSON
		case sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Uint8:
			f.kind = kBytes
		case sf.Type.Kind() == reflect.String && !slices.Contains(o, "guid"):
			f.kind = kString
		}
		mode, tagged := sf.Tag.Lookup(Tag)
		choose := tagged || named[name]
		delete(named, name)
		switch {
		case tagged && mode != "offload" && mode != "always":
			return fmt.Errorf("%w: %v.%s: tag %s:%q, want \"offload\" or \"always\"", ErrInvalid, t, sf.Name, Tag, mode)
		case choose && f.kind == 0:
			return fmt.Errorf("%w: %v.%s: only []byte, string and `table:\",json\"` fields can be offloaded", ErrInvalid, t, sf.Name)
		case f.kind == 0:
			continue
		case len(PointerPrefix)+len(name) > table.MaxPropertyNameLength:
			if choose {
				return fmt.Errorf("%w: %v.%s: property name %q is too long for its pointer property", ErrInvalid, t, sf.Name, name)
			}
			continue
		}
		f.always = mode == "always"
		s.readable[name] = f
		if choose {
			if err := checkStored[T](f); err != nil {
				return err
			}
			s.chosen = append(s.chosen, f)
		}
	}
	return nil
}

// checkStored checks that the table codec stores f under f.name, as
// the walk of addFields assumed: a T with only f set converts to a
// property bag holding it. (A json field's zero value may be omitted, so
// only []byte and string fields are checked this way.)
func checkStored[T any](f *field) error {
	if f.kind == kJSON {
		return nil
	}
	var v T
	fv := reflect.ValueOf(&v).Elem().FieldByIndex(f.index)
	if f.kind == kBytes {
		fv.SetBytes([]byte{1})
	} else {
		fv.SetString("x")
	}
	d, err := table.ToDynamic(v)
	if err != nil {
		return err
	}
	if _, ok := d.Properties[f.name]; !ok {
		return fmt.Errorf("%w: %v: the table codec does not store a property %q", ErrInvalid, reflect.TypeFor[T](), f.name)
	}
	return nil
}

// pointerProperty is the reserved property holding name's pointer.
func pointerProperty(name string) string { return PointerPrefix + name }

// keyHash names an entity's directory of blobs: 32 hex digits of the
// SHA-256 of its keys.
func keyHash(pk, rk string) string {
	h := sha256.Sum256([]byte(pk + "\x00" + rk))
	return hex.EncodeToString(h[:16])
}

// blobDir is the name prefix of every blob of property prop of entity
// (pk, rk).
func (s *Store[T]) blobDir(pk, rk, prop string) string {
	return s.prefix + "/" + keyHash(pk, rk) + "/" + prop + "/"
}

// idLen is the length of a blob name's write-unique id: 32 hex digits.
const idLen = 32

// blobName is a fresh, write-unique name for a value of property prop of
// entity (pk, rk).
func (s *Store[T]) blobName(pk, rk, prop string) string {
	var id [idLen / 2]byte
	_, _ = rand.Read(id[:])
	return s.blobDir(pk, rk, prop) + hex.EncodeToString(id[:])
}

// ownName reports whether name is one blobName gives a value of property
// prop of entity (pk, rk): its directory, then 32 lower-case hex digits.
func (s *Store[T]) ownName(pk, rk, prop, name string) bool {
	id, ok := strings.CutPrefix(name, s.blobDir(pk, rk, prop))
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
	if pk == "" {
		return fmt.Errorf("largeentity: %s: %w: %w: empty PartitionKey", op, ErrInvalid, table.ErrInvalidKey)
	}
	if err := keys.Validate(pk); err != nil {
		return fmt.Errorf("largeentity: %s: %w: PartitionKey: %w", op, ErrInvalid, err)
	}
	if err := keys.Validate(rk); err != nil {
		return fmt.Errorf("largeentity: %s: %w: RowKey: %w", op, ErrInvalid, err)
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
