package wideentity

// SetPageSize makes s read entities in pages of n rows, so that tests can
// exercise reads of several pages.
func SetPageSize[T any](s *Store[T], n int) { s.pageSize = n }

// DefaultPartsForTest is the default number of parts, for tests.
const DefaultPartsForTest = defaultParts
