package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
)

// This file is the stored format (see the package documentation):
//
//	value     = header || AES-256-GCM(key, nonce, plaintext, aad)
//	header    = version (1 byte, 1) || len(key id) (1 byte) || key id || nonce (12 bytes)
//	aad       = version || len(key id) || key id
//	            || u32(len(table)) lower(table) || u32(len(pk)) pk || u32(len(rk)) rk || u32(len(prop)) prop
//	plaintext = type (1 byte) || value || 0x80 || 0x00 ... to a multiple of 16 bytes

const (
	formatVersion = 1
	nonceSize     = 12
	tagSize       = 16
	padBlock      = 16
)

// Type bytes of the plaintext: the value's type as the table package's
// Dynamic holds it, so every field type round-trips exactly.
const (
	tString = 's'
	tBool   = 'b'
	tInt32  = 'i'
	tInt64  = 'l'
	tDouble = 'd'
	tTime   = 't'
	tBinary = 'x'
	tGUID   = 'g'
)

// appendTyped appends v's type byte and its bytes. v is a value of a
// table.Dynamic property as table.ToDynamic produces it.
func appendTyped(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return append(append(b, tString), x...), nil
	case bool:
		if x {
			return append(b, tBool, 1), nil
		}
		return append(b, tBool, 0), nil
	case int32:
		return binary.BigEndian.AppendUint32(append(b, tInt32), uint32(x)), nil
	case int64:
		return binary.BigEndian.AppendUint64(append(b, tInt64), uint64(x)), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(b, tDouble), math.Float64bits(x)), nil
	case time.Time:
		x = x.UTC()
		b = binary.BigEndian.AppendUint64(append(b, tTime), uint64(x.Unix()))
		return binary.BigEndian.AppendUint32(b, uint32(x.Nanosecond())), nil
	case []byte:
		return append(append(b, tBinary), x...), nil
	case table.GUID:
		return append(append(b, tGUID), x[:]...), nil
	}
	return b, fmt.Errorf("%w: a value of type %T cannot be encrypted", ErrInvalid, v)
}

// parseTyped is the reverse of appendTyped.
func parseTyped(p []byte) (any, bool) {
	if len(p) == 0 {
		return nil, false
	}
	t, p := p[0], p[1:]
	switch {
	case t == tString:
		return string(p), true
	case t == tBool && len(p) == 1 && p[0] <= 1:
		return p[0] == 1, true
	case t == tInt32 && len(p) == 4:
		return int32(binary.BigEndian.Uint32(p)), true
	case t == tInt64 && len(p) == 8:
		return int64(binary.BigEndian.Uint64(p)), true
	case t == tDouble && len(p) == 8:
		return math.Float64frombits(binary.BigEndian.Uint64(p)), true
	case t == tTime && len(p) == 12:
		return time.Unix(int64(binary.BigEndian.Uint64(p)), int64(binary.BigEndian.Uint32(p[8:]))).UTC(), true
	case t == tBinary:
		return append([]byte{}, p...), true
	case t == tGUID && len(p) == 16:
		return table.GUID(p), true
	}
	return nil, false
}

// binding is what a value is bound to: the associated data besides the
// header.
type binding struct{ table, pk, rk, prop string }

func appendAAD(b []byte, header []byte, w binding) []byte {
	b = append(b, header...)
	for _, s := range [...]string{w.table, w.pk, w.rk, w.prop} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}

// sealedSize is the stored size of a value whose typed plaintext is n
// bytes, under a key id of idLen bytes.
func sealedSize(idLen, n int) int {
	return 2 + idLen + nonceSize + (n/padBlock+1)*padBlock + tagSize
}

// seal encrypts v for property w.prop of entity (w.pk, w.rk) under key id,
// into at most maxBinary bytes (the service's largest Edm.Binary value).
func seal(aead cipher.AEAD, id string, w binding, v any, maxBinary int) ([]byte, error) {
	pt, err := appendTyped(make([]byte, 0, 64), v)
	if err != nil {
		return nil, err
	}
	if n := sealedSize(len(id), len(pt)); n > maxBinary {
		clear(pt)
		return nil, fmt.Errorf("%w: %w: the encrypted value would be %d bytes, more than an Edm.Binary holds (%d)", ErrInvalid, table.ErrTooLarge, n, maxBinary)
	}
	pt = append(pt, 0x80)
	for len(pt)%padBlock != 0 {
		pt = append(pt, 0)
	}
	out := make([]byte, 0, sealedSize(len(id), len(pt)-1))
	out = append(out, formatVersion, byte(len(id)))
	out = append(out, id...)
	hdr := len(out)
	out = out[:hdr+nonceSize]
	if _, err := rand.Read(out[hdr:]); err != nil {
		return nil, err
	}
	var buf [256]byte
	aad := appendAAD(buf[:0], out[:hdr], w)
	out = aead.Seal(out, out[hdr:hdr+nonceSize], pt, aad)
	clear(pt)
	return out, nil
}

// header returns the key id of a stored value and the header's length
// (before the nonce). The id is read from storage, so whoever can write the
// table chooses it: it is checked to be a well-formed key id (validKeyID)
// before it reaches a KeyProvider.
func header(b []byte) (id string, n int, ok bool) {
	if len(b) < 2 || b[0] != formatVersion {
		return "", 0, false
	}
	n = 2 + int(b[1])
	if len(b) < n+nonceSize+padBlock+tagSize {
		return "", 0, false
	}
	id = string(b[2:n])
	if validKeyID(id) != nil {
		return "", 0, false
	}
	return id, n, true
}

// open decrypts a stored value whose header (of n bytes) names the key of
// aead. It fails only with ErrDecrypt.
func open(aead cipher.AEAD, b []byte, n int, w binding) (any, error) {
	var buf [256]byte
	aad := appendAAD(buf[:0], b[:n], w)
	pt, err := aead.Open(nil, b[n:n+nonceSize], b[n+nonceSize:], aad)
	if err != nil {
		return nil, ErrDecrypt
	}
	defer clear(pt)
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 || pt[i] != 0x80 {
		return nil, ErrDecrypt
	}
	v, ok := parseTyped(pt[:i])
	if !ok {
		return nil, ErrDecrypt
	}
	return v, nil
}

// newAEAD returns AES-256-GCM for key, which must be 32 bytes.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: a key of %d bytes (AES-256 needs 32)", ErrBadKey, len(key))
	}
	c, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return cipher.NewGCM(c)
}
