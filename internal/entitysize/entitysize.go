// Package entitysize measures strings the way the table service does when
// it sizes an entity: in UTF-16 code units. Package table's codec counts
// property names with it, indexentity the keys and ids of its lists, so
// that both agree with the service's limits (1 MiB per entity, 64 KiB per
// string value). Being internal, it is tablekit's own; keys.Validate checks
// the length of keys for users.
package entitysize

// UTF16Len returns the length of s in UTF-16 code units: how the table
// service counts keys and string values (a character beyond the Basic
// Multilingual Plane is two; an invalid UTF-8 byte, read as U+FFFD, one).
func UTF16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
