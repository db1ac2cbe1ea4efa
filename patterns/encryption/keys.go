package encryption

import (
	"context"
	"crypto/cipher"
	"crypto/subtle"
	"fmt"
	"slices"
	"sync"
)

// KeyProvider supplies the data keys: AES-256 keys of 32 bytes, each
// named by an id that is stored in the header of every value it encrypts.
// Implementations must be safe for concurrent use and must return the same
// key bytes for an id every time (a key id names one key forever: rotate
// by adding a new id). The package documentation shows how to back one
// with Azure Key Vault.
type KeyProvider interface {
	// CurrentKey returns the key new values are encrypted with, and its id.
	CurrentKey(ctx context.Context) (id string, key []byte, err error)
	// Key returns the key named id, for reading values encrypted under it
	// (the current key or an older one). An id it does not know is an
	// error matching ErrUnknownKey. The id is read from the stored value,
	// so whoever can write the table chooses it: this package only checks
	// its form (1 to 255 printable ASCII characters, no spaces), so treat
	// it as untrusted input (never as a path, a URL to fetch or a query
	// without checking it against the ids you issued).
	Key(ctx context.Context, id string) ([]byte, error)
}

// StaticKeys is a KeyProvider over keys held in memory, for tests,
// examples and applications that load their keys at start-up. It is
// immutable and safe for concurrent use; to rotate, build a new one whose
// current key is the new key and that still holds the old ones.
type StaticKeys struct {
	current string
	keys    map[string][]byte
}

// NewStaticKeys returns a StaticKeys holding keys (copied), whose key
// current encrypts new values. Each key must be 32 bytes and each id 1 to
// 255 printable ASCII characters (ErrBadKey); current must be one of them
// (ErrUnknownKey). Every such error is also an ErrInvalid.
func NewStaticKeys(current string, keys map[string][]byte) (*StaticKeys, error) {
	s := &StaticKeys{current: current, keys: make(map[string][]byte, len(keys))}
	for id, k := range keys {
		if err := validKeyID(id); err != nil {
			return nil, err
		}
		if len(k) != 32 {
			return nil, fmt.Errorf("%w: key %q has %d bytes (AES-256 needs 32)", ErrBadKey, id, len(k))
		}
		s.keys[id] = append([]byte(nil), k...)
	}
	if _, ok := s.keys[current]; !ok {
		return nil, fmt.Errorf("%w: the current key %q is not among the keys (%w)", ErrInvalid, current, ErrUnknownKey)
	}
	return s, nil
}

// CurrentKey returns the current key (a copy) and its id.
func (s *StaticKeys) CurrentKey(ctx context.Context) (string, []byte, error) {
	return s.current, slices.Clone(s.keys[s.current]), nil
}

// Key returns the key named id (a copy), or an error matching
// ErrUnknownKey.
func (s *StaticKeys) Key(ctx context.Context, id string) ([]byte, error) {
	k, ok := s.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, id)
	}
	return slices.Clone(k), nil
}

// validKeyID checks that id fits the header: 1 to 255 bytes of printable
// ASCII (Key Vault key URLs fit).
func validKeyID(id string) error {
	if len(id) == 0 || len(id) > 255 {
		return fmt.Errorf("%w: a key id of %d bytes (1 to 255)", ErrBadKey, len(id))
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return fmt.Errorf("%w: a key id must be printable ASCII without spaces", ErrBadKey)
		}
	}
	return nil
}

// ciphers caches one AEAD per key id, rebuilt if the provider ever returns
// other bytes for the id. It is safe for concurrent use.
type ciphers struct {
	mu sync.Mutex
	m  map[string]cachedAEAD
}

type cachedAEAD struct {
	key  []byte
	aead cipher.AEAD
}

func (c *ciphers) get(id string, key []byte) (cipher.AEAD, error) {
	if err := validKeyID(id); err != nil {
		return nil, err
	}
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && subtle.ConstantTimeCompare(e.key, key) == 1 {
		return e.aead, nil
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", id, err)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedAEAD{}
	}
	c.m[id] = cachedAEAD{key: append([]byte(nil), key...), aead: aead}
	c.mu.Unlock()
	return aead, nil
}
