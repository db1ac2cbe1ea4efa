// Package cursorseal seals the cursors of tablekit's paged listings
// (table.Cursor) under an application's secret, so that a cursor handed to
// an end user reveals nothing and cannot be altered, and quotes cursors
// for error texts within a bound. Package table owns the exported key
// (table.CursorKey) and seals its query cursors; internal/keycursor seals
// the cursors of the listings that merge several queries; both seal here.
//
// A sealed cursor is the unpadded base64url encoding of
//
//	version (1 byte) | salt (16 random bytes) | AES-256-GCM ciphertext | tag (16 bytes)
//
// sealing the listing's plain cursor. Its AES key is
// HMAC-SHA256(secret, label | salt), a key of its own, used once: GCM's
// nonce is then fixed, and a secret may seal any number of cursors (a
// random 96-bit nonce under one AES key is safe for about 2^32 of them
// only). The additional authenticated data are the version and the
// listing (what the cursor belongs to: the table and query, the log and
// range), so a cursor of another listing fails to open, as does any
// altered, removed or added character. Open tries each secret of a Key in
// turn, so an application rotates its secret by putting the new one first
// and keeping the old one until its cursors have expired.
package cursorseal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// MinSecret is the length, in bytes, of the shortest secret New accepts:
// 32 random bytes, as an AES-256 key.
const MinSecret = 32

const (
	version  = 1
	saltLen  = 16
	tagLen   = 16
	overhead = 1 + saltLen + tagLen
	label    = "tablekit cursor v1\x00"
)

// enc is strict: a changed last character whose dropped bits differ is
// refused, not decoded to the same bytes.
var enc = base64.RawURLEncoding.Strict()

// nonce is GCM's nonce: each AES key seals one cursor only.
var nonce [12]byte

// Key seals and opens cursors with one or more secrets, the first sealing.
// It is immutable and safe for concurrent use.
type Key struct {
	secrets [][]byte
}

// New returns the Key of secrets (at least one, each at least MinSecret
// bytes): Seal uses the first, Open tries them all. The secrets are
// copied. Its error names a secret by position and length only.
func New(secrets ...[]byte) (*Key, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no secret")
	}
	k := &Key{secrets: make([][]byte, len(secrets))}
	for i, s := range secrets {
		if len(s) < MinSecret {
			return nil, fmt.Errorf("secret %d is %d bytes, want at least %d (random bytes)", i, len(s), MinSecret)
		}
		k.secrets[i] = append([]byte(nil), s...)
	}
	return k, nil
}

// aead returns the AES-256-GCM of secret and salt.
func aead(secret, salt []byte) cipher.AEAD {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write(salt)
	b, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(err) // unreachable: a SHA-256 sum is a valid AES-256 key
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err) // unreachable: AES has GCM's block size
	}
	return g
}

// ad is the additional authenticated data of a cursor of listing.
func ad(listing string) []byte {
	return append([]byte{version}, listing...)
}

// Seal returns plain sealed as a cursor of listing.
func (k *Key) Seal(listing, plain string) string {
	raw := make([]byte, 1+saltLen, overhead+len(plain))
	raw[0] = version
	if _, err := rand.Read(raw[1:]); err != nil {
		panic(err) // crypto/rand does not fail (Go 1.24 crashes itself)
	}
	raw = aead(k.secrets[0], raw[1:]).Seal(raw, nonce[:], []byte(plain), ad(listing))
	return enc.EncodeToString(raw)
}

// Open returns the plain cursor that c seals as a cursor of listing, and
// false when c is not one (altered, of another listing, sealed with none
// of k's secrets, or not sealed at all).
func (k *Key) Open(listing, c string) (string, bool) {
	raw, err := enc.DecodeString(c)
	// The decoder skips line breaks: a length other than the encoding's
	// is a character added.
	if err != nil || len(raw) < overhead || raw[0] != version || enc.EncodedLen(len(raw)) != len(c) {
		return "", false
	}
	salt, sealed, a := raw[1:1+saltLen], raw[1+saltLen:], ad(listing)
	for _, s := range k.secrets {
		if plain, err := aead(s, salt).Open(nil, nonce[:], sealed, a); err == nil {
			return string(plain), true
		}
	}
	return "", false
}

// QuoteLen is the most bytes of a cursor Quote shows.
const QuoteLen = 16

// Quote returns cursor c for an error text, bounded whatever c's length:
// its first QuoteLen bytes, quoted, and its length when it is longer.
// Cursors come from callers (end users, through an application), so no
// error, span or log carries more of one.
func Quote(c string) string {
	if len(c) <= QuoteLen {
		return strconv.Quote(c)
	}
	return strconv.Quote(c[:QuoteLen]) + "... (" + strconv.Itoa(len(c)) + " bytes)"
}

// of returns the Key of a *table.CursorKey (nil for a nil one); package
// table sets it when it is initialised.
var of func(any) *Key

// Register is called once by package table's init with the function
// behind Of.
func Register(f func(any) *Key) { of = f }

// Of returns the Key of k, a *table.CursorKey: nil when k is nil (cursors
// not sealed).
func Of(k any) *Key { return of(k) }

// tableKey and withTableKey are package table's, over its *Table[T]
// values and *CursorKey given as any (internal/keycursor gives them types).
var (
	tableKey     func(t any) any
	withTableKey func(t, k any) any
)

// RegisterTables is called once by package table's init with the
// functions behind TableKey and WithTableKey.
func RegisterTables(key func(t any) any, with func(t, k any) any) {
	tableKey, withTableKey = key, with
}

// TableKey returns the *table.CursorKey of t, a *table.Table[T] (a nil
// one when its cursors are plain).
func TableKey(t any) any { return tableKey(t) }

// WithTableKey returns a view of t, a *table.Table[T], whose cursors k (a
// *table.CursorKey, nil for plain) seals.
func WithTableKey(t, k any) any { return withTableKey(t, k) }
