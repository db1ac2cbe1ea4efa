package keys

import (
	"fmt"
	"strconv"
)

// Bucket maps key to one of n buckets, for spreading writes that would
// otherwise hit one hot partition (the guide's prepend/append anti-pattern):
// use Join(Bucket(id, 16), ...) as the PartitionKey and query all buckets in
// parallel. The result is in [0, n), zero-padded to the number of digits of
// n-1, so it is itself a valid fixed-width key (Bucket(k, 100) is "00".."99").
//
// The hash is stable across processes, versions and platforms: 64-bit
// FNV-1a of the key's bytes, followed by the MurmurHash3 fmix64 finalizer
// (so that similar keys spread evenly), reduced modulo n. It will not change
// in a later version: stored keys depend on it. Bucket panics when n < 1.
func Bucket(key string, n int) string {
	if n < 1 {
		panic(fmt.Sprintf("keys.Bucket: n must be at least 1, got %d", n))
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return Pad(h%uint64(n), len(strconv.Itoa(n-1)))
}
