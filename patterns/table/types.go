package table

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Meta receives an entity's service-maintained metadata on reads. Embed it
// (or add a field of this type) in an entity struct; it is never written.
type Meta struct {
	// ETag identifies the version read; pass it to Update or Delete for
	// optimistic concurrency.
	ETag azcore.ETag
	// Timestamp is the service's last-modified time, in UTC.
	Timestamp time.Time

	// writes is the version's write history (TkWrites), read with
	// ETag from the entity (pk, rk): an Update or UpdateOp of that entity
	// conditioned on ETag extends it, which lets a lost response be
	// verified exactly.
	writes, pk, rk string
	// upgraded: the value was read from an older version of its
	// registered type; written back, it is written whole (Replace).
	upgraded bool
}

// GUID is an Edm.Guid value. Any type whose underlying type is [16]byte
// (such as github.com/google/uuid.UUID) is stored as Edm.Guid; GUID is the
// type Dynamic properties use.
type GUID [16]byte

// String formats g as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (g GUID) String() string {
	var b [36]byte
	return string(appendGUID(b[:0], g))
}

func appendGUID(b []byte, g [16]byte) []byte {
	var h [32]byte
	hex.Encode(h[:], g[:])
	b = append(b, h[0:8]...)
	b = append(b, '-')
	b = append(b, h[8:12]...)
	b = append(b, '-')
	b = append(b, h[12:16]...)
	b = append(b, '-')
	b = append(b, h[16:20]...)
	b = append(b, '-')
	return append(b, h[20:32]...)
}

// parseGUID parses the canonical 36-character form (case-insensitive).
func parseGUID(s string) (GUID, error) {
	var g GUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, fmt.Errorf("invalid GUID %q", s)
	}
	src := []byte(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36])
	if _, err := hex.Decode(g[:], src); err != nil {
		return g, fmt.Errorf("invalid GUID %q", s)
	}
	return g, nil
}

// Mode chooses what an update or upsert writes: Merge, Replace, or a
// Fields merge of named properties only. The zero Mode is invalid (the
// choice must be explicit).
//
// What a merge of a struct sends: every property field, including zero
// values (a zero string, number or bool overwrites the stored value), except
// nil pointers, nil []byte, the zero time.Time, empty `guid` strings and
// zero values of `omitempty` fields, which are left out and so keep their
// stored values. To change some properties and keep the rest, use
// Fields(...), or Modify (read, change, write back with the ETag).
type Mode struct {
	kind   uint8 // 1 merge, 2 replace
	fields []string
}

var (
	// Merge updates the properties sent and keeps the others (HTTP MERGE).
	Merge = Mode{kind: 1}
	// Replace makes the entity exactly what is sent: stored properties that
	// are not sent are removed (HTTP PUT).
	Replace = Mode{kind: 2}
)

// Fields returns a Merge that writes only the named properties of the
// entity (and its keys): a partial update that cannot wipe other fields.
// The names are checked against T when the update is made (ErrInvalidEntity
// for a name T has no field for, unless T has an extra map).
func Fields(names ...string) Mode {
	return Mode{kind: 1, fields: append([]string{}, names...)}
}

// fieldNames returns the property names of a Fields merge, and nil for
// Merge and Replace (fieldmodel.ModeFields).
func (m Mode) fieldNames() []string {
	if m.fields == nil {
		return nil
	}
	return append([]string{}, m.fields...)
}

// String returns "merge", "replace" or "merge of [A B]".
func (m Mode) String() string {
	switch {
	case m.kind == 1 && m.fields != nil:
		return fmt.Sprintf("merge of %v", m.fields)
	case m.kind == 1:
		return "merge"
	case m.kind == 2:
		return "replace"
	}
	return "Mode(invalid)"
}

// Dynamic is an entity whose shape is not known up front: keys, metadata
// and a property bag. Use Table[Dynamic] to read or write any entity.
//
// Property values are string, bool, int32, int64, float64, time.Time,
// []byte and GUID when read. Writes also accept int (as Int64), float32,
// any [16]byte type (Guid) and the aztables EDM types.
//
// One ambiguity is inherent: the service (and Azurite) return a whole-number
// Edm.Double such as 2.0 as the JSON number 2 without a type annotation, so
// a property bag reads it as int32(2). Typed struct fields do not have this
// problem: a float64 field reads 2 as 2.0.
type Dynamic struct {
	Meta
	PartitionKey string
	RowKey       string
	Properties   map[string]any `table:",extra"`
}

// Entity is an entity as read: the keys it is stored under, the ETag of
// the version read and its value. It is the one read envelope of tablekit:
// every package's reads return an Entity or a struct that embeds one and
// adds only the package's own fields (an index copy's provenance, a wide
// entity's parts, a blob pointer, a log entry's time).
type Entity[T any] struct {
	// PartitionKey and RowKey are the entity's keys as T defines them (a
	// pattern that stores a row under a key of its own making reports the
	// entity's keys, not its row's).
	PartitionKey, RowKey string
	// ETag is the version read (for Modify, written): pass it to Update or
	// Delete for optimistic concurrency. Empty when the value was not read
	// from the entity itself (an index copy), or when a write whose
	// response was lost was verified and the entity has been written again
	// since (as Result.ETag).
	ETag azcore.ETag
	// Value is the entity. When T embeds Meta, Value's Meta holds the ETag
	// and Timestamp too.
	Value T
}

// Result is the outcome of a successful write. Packages that report more
// about a write embed it.
type Result struct {
	// ETag is the entity's new version. It is empty when the write was
	// Verified and the entity has been written again since.
	ETag azcore.ETag
	// Verified reports that the write's response was lost and a read of the
	// entity proved it applied (see TkWrites).
	Verified bool

	stamp string // the reserved.WriteProperty value written, for Modify
}
