package table

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/internal/retrycore"
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

// writeIDLen is the length of one write identity: 64 random bits in
// unpadded base64url.
const writeIDLen = 11

// stampSize bounds the size of TkWrites as Table Storage counts it,
// stampJSON its JSON (for Cosmos DB's measure).
var (
	stampSize = 8 + 2*len(reserved.WriteProperty) + 4 + 2*(reserved.HistoryLength*(writeIDLen+1))
	stampJSON = len(`,"`+reserved.WriteProperty+`":""`) + reserved.HistoryLength*(writeIDLen+1)
)

func newWriteID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// history returns the write identities of a TkWrites value, newest
// first. Anything that is not an identity tablekit writes (11 base64url
// characters) is dropped, so a stored value written by other code can never
// reach a request body unescaped.
func history(v string) []string {
	if v == "" {
		return nil
	}
	var h []string
	for _, id := range strings.Split(v, ",") {
		if validWriteID(id) && len(h) < reserved.HistoryLength {
			h = append(h, id)
		}
	}
	return h
}

// cleanHistory is history as a TkWrites value.
func cleanHistory(v string) string { return strings.Join(history(v), ",") }

func validWriteID(id string) bool {
	if len(id) != writeIDLen {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// stampValue is the TkWrites value of a write with identity id whose
// condition is the version that had history prev (empty when unknown).
// Only valid identities are kept, so the value never needs escaping.
func stampValue(id, prev string) string {
	h := append([]string{id}, history(prev)...)
	return strings.Join(h[:min(len(h), reserved.HistoryLength)], ",")
}

// appendStamp appends TkWrites to the entity JSON body (which ends
// with '}').
func appendStamp(body []byte, value string) []byte {
	body = append(body[:len(body)-1], `,"`+reserved.WriteProperty+`":"`...)
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
	id     string      // the identity it wrote into reserved.WriteProperty, "" if none
	prev   string      // the newest identity of the version etag names, "" if unknown
	stamp  string      // the reserved.WriteProperty value it wrote
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
//   - a conditional write whose condition's version is gone (the ETag
//     differs) while the entity still descends from it (the version's
//     newest identity is in the history): not applied, since w, conditioned
//     on a version that has a successor other than w, can never apply;
//   - a conditional write whose condition still matches: an attempt may
//     still be on its way to the service, so verify fences it: a stamped,
//     empty merge conditioned on the same ETag. When the fence applies, the
//     version is gone and w can never apply: not applied;
//   - anything else (the entity is gone, its history was replaced or is
//     longer than 8 since, the fence failed): unknown.
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
		if fence(ctx, c, w, strings.Join(h, ",")) {
			return notApplied, ""
		}
		return unknown, ""
	}
	if w.prev != "" && slices.Contains(h, w.prev) {
		return notApplied, ""
	}
	return unknown, ""
}

// fence makes w's condition stale with a stamped, empty merge conditioned on
// it, so that no attempt of w still on its way can apply. It reports
// whether the fence certainly applied.
func fence(ctx context.Context, c *aztables.Client, w write, hist string) bool {
	body, _ := appendString([]byte(`{"PartitionKey":`), w.pk)
	body = append(body, `,"RowKey":`...)
	body, _ = appendString(body, w.rk)
	body = appendStamp(append(body, '}'), stampValue(newWriteID(), hist))
	etag := w.etag
	_, err := c.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: &etag, UpdateMode: aztables.UpdateModeMerge})
	return err == nil
}

// storedHistory returns the TkWrites history of an entity body.
func storedHistory(body []byte) ([]string, bool) {
	props, _, err := scanObject(body, nil)
	if err != nil {
		return nil, false
	}
	for _, p := range props {
		if string(p.name) == reserved.WriteProperty && p.value.kind == 's' {
			return history(stringOf(p.value)), true
		}
	}
	return nil, true
}

// ambiguous reports whether a failed write w may have been applied. With a
// client whose pipeline has retry's policy the Trace knows. Without it
// (azcore's own retry may have resent the request), a transport or context
// error and a 500, 502 or 504 may have been applied, and so may a 412 or
// 404 answering a conditional write, which one read settles; a 409 to an
// insert is taken at face value (see the package documentation).
func ambiguous(tr *retrycore.Trace, w write, err error) bool {
	if tr.Tracked() {
		return tr.Ambiguous()
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return true
	}
	switch {
	case retrycore.MayHaveApplied(re.StatusCode):
		return true
	case re.StatusCode == http.StatusPreconditionFailed, re.StatusCode == http.StatusNotFound:
		return w.kind != aztables.TransactionTypeAdd && w.verifiable()
	}
	return false
}

// settle turns a failed single write into its reported outcome: a
// definite failure, a verified success, or ErrOutcomeUnknown. werr is the
// failure as an *Error.
func settle(ctx context.Context, c *aztables.Client, tr *retrycore.Trace, w write, werr *Error) (Result, error) {
	if !ambiguous(tr, w, werr.Err) {
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
