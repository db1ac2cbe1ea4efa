package table

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/retry"
)

// This file holds the write-outcome model: every write is applied, not
// applied, or of unknown outcome, and a lost response is resolved by
// reading the entity's write history instead of guessing (see doc.go).

// ErrOutcomeUnknown: a write may or may not have been applied (its
// response was lost, or the context ended while it was in flight) and a
// read could not settle it. It is retry.ErrOutcomeUnknown. Do not repeat
// the write blindly: re-read, and decide.
var ErrOutcomeUnknown = retry.ErrOutcomeUnknown

// WriteProperty is the property in which tablekit records the identities
// of the last writes of an entity (at most HistoryLength of them, newest
// first), so that a write whose response was lost can be verified by
// reading. Inserts and conditional updates (an ETag other than
// azcore.ETagAny) write it, single or in Submit; upserts and unconditional
// updates leave it alone (a merge keeps it, a replace removes it). It costs
// one property and at most about 230 bytes of the entity's 1 MiB; an entity
// that already has 252 properties, or would pass 1 MiB with it, is written
// without it and its lost responses are reported as ErrOutcomeUnknown.
//
// It is reserved: a struct field or Dynamic property of this name is
// rejected, it is never decoded into T, and other code must not write it.
const WriteProperty = "TkWrites"

// HistoryLength is how many write identities WriteProperty keeps. A lost
// response is settled exactly as long as fewer than HistoryLength other
// writes reached the entity between the lost attempt and the verifying
// read; past that it is ErrOutcomeUnknown. An inserted entity carries one
// identity (about 60 bytes); each conditional update adds one (12 bytes),
// up to about 230 bytes.
const HistoryLength = 8

// writeIDLen is the length of one write identity: 64 random bits in
// unpadded base64url.
const writeIDLen = 11

// stampSize bounds the size of WriteProperty as the service counts it.
var stampSize = 8 + 2*len(WriteProperty) + 4 + 2*(HistoryLength*(writeIDLen+1))

func newWriteID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// history returns the write identities of a WriteProperty value, newest
// first.
func history(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// stampValue is the WriteProperty value of a write with identity id whose
// condition is the version that had history prev (empty when unknown).
func stampValue(id, prev string) string {
	h := append([]string{id}, history(prev)...)
	return strings.Join(h[:min(len(h), HistoryLength)], ",")
}

// appendStamp appends WriteProperty to the entity JSON body (which ends
// with '}').
func appendStamp(body []byte, value string) []byte {
	body = append(body[:len(body)-1], `,"`+WriteProperty+`":"`...)
	body = append(body, value...)
	return append(body, '"', '}')
}

// outcome is what a verification concluded.
type outcome int

const (
	unknown outcome = iota
	applied
	notApplied
)

// write identifies a write for verification.
type write struct {
	kind   aztables.TransactionType
	pk, rk string
	etag   azcore.ETag // the condition; "" for inserts and upserts
	id     string      // the identity it wrote into WriteProperty, "" if none
	prev   string      // the newest identity of the version etag names, "" if unknown
}

// verifiable reports whether a read can settle w's outcome.
func (w write) verifiable() bool {
	switch w.kind {
	case aztables.TransactionTypeAdd:
		return w.id != ""
	case aztables.TransactionTypeUpdateMerge, aztables.TransactionTypeUpdateReplace, aztables.TransactionTypeDelete:
		return w.etag != azcore.ETagAny
	}
	return false
}

// verify reads w's entity and decides whether w was applied:
//   - its identity is in the entity's history: applied (the ETag read is
//     returned when w is still the newest write);
//   - a conditional write whose condition still matches, or whose
//     condition's version has a successor other than w in the history (or
//     is still the newest write there): not applied;
//   - a conditional delete whose entity still descends from the condition's
//     version: not applied;
//   - anything else (the entity is gone, its history was replaced or is
//     longer than HistoryLength since): unknown.
func verify(ctx context.Context, c *aztables.Client, w write) (outcome, azcore.ETag) {
	if !w.verifiable() {
		return unknown, ""
	}
	resp, err := c.GetEntity(ctx, w.pk, w.rk, &aztables.GetEntityOptions{Format: ptr(aztables.MetadataFormatNone)})
	if err != nil {
		return unknown, ""
	}
	h, ok := storedHistory(resp.Value)
	if !ok {
		return unknown, ""
	}
	for i, id := range h {
		if w.id != "" && id == w.id {
			if i == 0 {
				return applied, resp.ETag
			}
			return applied, ""
		}
	}
	if w.kind == aztables.TransactionTypeAdd {
		return unknown, ""
	}
	if resp.ETag == w.etag {
		return notApplied, ""
	}
	if w.prev == "" {
		return unknown, ""
	}
	for _, id := range h {
		if id == w.prev {
			// The entity descends from the condition's version, and w is
			// not its successor (w's identity would be newer than prev).
			return notApplied, ""
		}
	}
	return unknown, ""
}

// storedHistory returns the WriteProperty history of an entity body.
func storedHistory(body []byte) ([]string, bool) {
	props, _, err := scanObject(body, nil)
	if err != nil {
		return nil, false
	}
	for _, p := range props {
		if string(p.name) == WriteProperty && p.value.kind == 's' {
			return history(stringOf(p.value)), true
		}
	}
	return nil, true
}

// ambiguous reports whether a failed write may have been applied. With a
// client whose pipeline has retry's policy the Trace knows; without it, a
// service answer is taken at face value and any other failure (transport,
// context) may have been applied.
func ambiguous(tr *retry.Trace, err error) bool {
	if tr.Tracked() {
		return tr.Ambiguous()
	}
	var re *azcore.ResponseError
	return !errors.As(err, &re)
}

// settle turns a failed single write into its reported outcome: a
// definite failure, a verified success, or ErrOutcomeUnknown. werr is the
// failure as an *Error.
func settle(ctx context.Context, c *aztables.Client, tr *retry.Trace, w write, werr *Error) (Result, error) {
	if !ambiguous(tr, werr.Err) {
		return Result{}, werr
	}
	if ctx.Err() != nil {
		werr.Unknown = true
		return Result{}, werr
	}
	switch o, etag := verify(ctx, c, w); o {
	case applied:
		return Result{ETag: etag, Verified: true}, nil
	case notApplied:
		werr.Unknown = false
		return Result{}, werr
	}
	werr.Unknown = true
	return Result{}, werr
}
