package indexentity

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/entitysize"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
)

// How a list of ids is stored.
//
// An id is the entity's RowKey in the same-partition store, and
// keys.Join(PartitionKey, RowKey) in the other two. Neither contains '/'
// (the service refuses it in keys, and keys.Join escapes nothing into it),
// so each id is written followed by '/', and a list is its ids in sorted
// (byte) order. An index entity holds the list in string properties
// ListProperty+"00", ListProperty+"01", ... each at most 32,768 UTF-16 code
// units (the table's Profile().MaxValueSize, 64 KiB) and holding whole ids; a blob holds it as one
// id per line.

// ListProperty starts the names of the properties of an index entity that
// hold its list: Ids00, Ids01, and so on, each a string of ids, each id
// followed by '/'.
const ListProperty = "Ids"

// stampReserve is the room an index entity keeps for the core's write
// history (reserved.WriteProperty: its name and at most HistoryLength
// identities of 11 characters and a comma), so that the history always
// fits and a lost response to a write of the index entity can be verified.
var stampReserve = 8 + 2*len(reserved.WriteProperty) + 4 + 2*reserved.HistoryLength*12

// listProperties returns the properties of an index entity with keys
// (pk, rk) holding ids (sorted), or an error wrapping table.ErrTooLarge
// when the entity would pass the limits of p (Table Storage's 1 MiB as it
// counts entities, Cosmos DB's 2 MB of JSON) with room left for the write
// history. what names the list for the error.
func listProperties(p *table.Profile, pk, rk string, ids []string, what string) (map[string]any, error) {
	size := 4 + 2*entitysize.UTF16Len(pk) + 2*entitysize.UTF16Len(rk) + stampReserve // as Table Storage counts
	js := 64 + jsonLen(pk) + jsonLen(rk) + stampReserve                              // JSON bytes, an upper bound
	props := map[string]any{}
	var b strings.Builder
	n := 0 // UTF-16 code units in b
	flush := func() {
		name := fmt.Sprintf("%s%02d", ListProperty, len(props))
		props[name] = b.String()
		size += 8 + 2*len(name) + 4 + 2*n
		js += 6 + len(name) + jsonLen(b.String())
		b.Reset()
		n = 0
	}
	for _, id := range ids {
		u := entitysize.UTF16Len(id) + 1
		if n+u > p.MaxValueSize/2 {
			flush()
		}
		b.WriteString(id)
		b.WriteByte('/')
		n += u
	}
	if n > 0 {
		flush()
	}
	tooLarge := func(size, most int, as string) error {
		return fmt.Errorf("%w: the list of %s would hold %d ids in an entity of %d bytes %s, more than one entity of %s holds (%d, with room for its write history): keep such lists in blobs (Options.Blobs), which hold lists of any size",
			table.ErrTooLarge, what, len(ids), size, as, p.Name, most)
	}
	switch {
	case p.MaxEntitySize > 0 && size > p.MaxEntitySize:
		return nil, tooLarge(size, p.MaxEntitySize, "as the service counts them")
	case p.MaxEntityJSON > 0 && js > p.MaxEntityJSON:
		return nil, tooLarge(js, p.MaxEntityJSON, "of JSON")
	}
	return props, nil
}

// jsonLen bounds the length of s as a JSON string: quotes, and six bytes
// for every character an encoder may escape.
func jsonLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r < 0x20, r == '<', r == '>', r == '&', r == 0x2028, r == 0x2029:
			n += 6
		case r == '"', r == '\\':
			n += 2
		default:
			n += utf8.RuneLen(r) // an invalid byte is U+FFFD here: 3, as written
		}
	}
	return n
}

// listOf reads the ids of an index entity's list properties, sorted.
func listOf(props map[string]any) ([]string, error) {
	names := make([]string, 0, len(props))
	for name := range props {
		if strings.HasPrefix(name, ListProperty) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var ids []string
	for _, name := range names {
		s, ok := props[name].(string)
		if !ok {
			return nil, fmt.Errorf("%w: list property %s holds %T, not a string", ErrCorrupt, name, props[name])
		}
		ids = appendIDs(ids, s, '/')
	}
	return sortedIDs(ids), nil
}

// appendIDs appends the ids of s, each followed by sep.
func appendIDs(ids []string, s string, sep byte) []string {
	for len(s) > 0 {
		i := strings.IndexByte(s, sep)
		if i < 0 {
			return append(ids, s) // a last id without its separator
		}
		ids = append(ids, s[:i])
		s = s[i+1:]
	}
	return ids
}

// sortedIDs sorts ids if needed and drops duplicates, so that a list
// written by other code still reads as a set.
func sortedIDs(ids []string) []string {
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	return slices.Compact(ids)
}

// blobText is the content of a list's blob: one id per line.
func blobText(ids []string) []byte {
	n := 0
	for _, id := range ids {
		n += len(id) + 1
	}
	b := make([]byte, 0, n)
	for _, id := range ids {
		b = append(b, id...)
		b = append(b, '\n')
	}
	return b
}

// blobIDs reads a list's blob.
func blobIDs(data []byte) ([]string, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: a list blob is not UTF-8 text", ErrCorrupt)
	}
	return sortedIDs(appendIDs(nil, string(data), '\n')), nil
}

// set puts id into the sorted list ids (in) or takes it out, and reports
// whether the list changed.
func set(ids []string, id string, in bool) ([]string, bool) {
	i, found := slices.BinarySearch(ids, id)
	switch {
	case in && !found:
		return slices.Insert(slices.Clip(ids), i, id), true
	case !in && found:
		return slices.Delete(slices.Clone(ids), i, i+1), true
	}
	return ids, false
}
