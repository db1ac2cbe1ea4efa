// Package bucketkey is tablekit's one scheme for the partitions a hot
// logical partition is spread over: patterns/buckets stores a Spread's
// entities in them, and a bucketed patterns/logtail log its entries, so
// that both read them back with the same merge.
package bucketkey

import "github.com/tablekit/tablekit/keys"

// Partition returns the PartitionKey of bucket b of logical partition pk
// under a bucket count of n: [keys.Join](pk, b as three digits) for n > 1
// ("hot!003"), keys.Join(pk) for n = 1 (pk itself, escaped: "hot"). The
// bucket number does not depend on n, so the partitions of a smaller
// count are among those of a larger one; keys.Join escapes '!' inside pk,
// so no logical partition's buckets fall among another's. b is below
// 1,000 (three digits: buckets.MaxBuckets).
func Partition(pk string, n, b int) string {
	if n == 1 {
		return keys.Join(pk)
	}
	return keys.Join(pk, keys.Pad(uint64(b), 3))
}
