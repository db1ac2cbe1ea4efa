package eventual

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/keys"
)

// MaxMessageSize is the longest message text a queue accepts (64 KiB of
// characters); a message is its intent's envelope in JSON, base64-encoded.
const MaxMessageSize = 64 << 10

// maxEnvelope is the most JSON an envelope may have when it is enqueued:
// what base64 fits in MaxMessageSize, less room for what the worker adds
// later: the last error (maxErrorText), the release mark and abandon
// count, and the poison record's wrapper.
const maxEnvelope = MaxMessageSize/4*3 - maxErrorText - 256

// MaxPayloadSize is the largest payload an intent may have, as JSON: 4 MiB.
// A payload too large for a message travels in a claim-check blob up to
// this size; Enqueue and Commit refuse a larger one (ErrInvalid, matching
// table.ErrTooLarge), and the worker poisons a claim check larger than
// this without reading it.
const MaxPayloadSize = 4 << 20

// maxErrorText is the most bytes of a handler's error recorded in a message
// or a commit record.
const maxErrorText = 1024

// maxKindName is the longest kind name.
const maxKindName = 128

// Kind names one kind of intent and ties it to its payload type P. Make one
// per kind, once (a package-level variable), and use it both to make
// intents (New) and to handle them (Handle), so the payload type of both
// ends is the same by construction.
type Kind[P any] struct{ name string }

// NewKind returns the kind named name. The name goes into every message of
// the kind and selects its handler: 1 to 128 printable ASCII characters.
// An invalid name is reported by New's drafts and by NewWorker.
func NewKind[P any](name string) Kind[P] { return Kind[P]{name: name} }

// Name returns the kind's name.
func (k Kind[P]) Name() string { return k.name }

// New makes a draft intent of kind k with payload p, and a fresh ID. The
// payload is encoded with encoding/json now: an error (a kind name that is
// not valid, a payload json cannot encode) is kept in the Draft and
// reported by Enqueue or Commit, which then send nothing.
func (k Kind[P]) New(p P) Draft {
	d := Draft{env: envelope{V: 1, Kind: k.name, Created: time.Now().UTC()}}
	if d.err = validKind(k.name); d.err != nil {
		return d
	}
	d.env.ID, d.err = newID()
	if d.err != nil {
		return d
	}
	raw, err := json.Marshal(p)
	if err != nil {
		d.err = fmt.Errorf("%w: encoding the %s payload: %v", ErrInvalid, k.name, err)
		return d
	}
	d.env.Payload = raw
	return d
}

// Handle returns the Handler that runs fn for every intent of kind k, with
// its payload decoded. fn must be idempotent: an intent may be delivered
// more than once (after a crash, a lost response, an expired lease) and in
// any order with other intents, and beside another intent's run for the
// same entity. Reconcile from the source of truth (read the current state,
// compute what it should be, fix what differs, then check the state read
// is still current, going round when it is not) rather than apply deltas;
// see the package documentation. A nil error means done: the
// intent is then removed. An error is recorded and the intent is tried
// again after a backoff, until WorkerOptions.MaxDeliveries.
func (k Kind[P]) Handle(fn func(ctx context.Context, in Intent[P]) error) Handler {
	return Handler{kind: k.name, run: func(ctx context.Context, d *delivery) error {
		in := Intent[P]{ID: d.env.ID, Kind: d.env.Kind, Created: d.env.Created, DequeueCount: d.count, LastError: d.env.LastError}
		if err := json.Unmarshal(d.payload, &in.Payload); err != nil {
			return &permanentError{fmt.Errorf("decoding the %s payload: %w", k.name, err)}
		}
		return fn(ctx, in)
	}}
}

// Intent is one delivery of an intent to its handler.
type Intent[P any] struct {
	// ID is the intent's unique id: its idempotency key.
	ID string
	// Kind is the kind's name.
	Kind string
	// Created is when the intent was made (Kind.New), in UTC.
	Created time.Time
	// Payload is the intent's payload, decoded.
	Payload P
	// DequeueCount counts the deliveries of the intent's message, this one
	// included: 1 the first time.
	DequeueCount int64
	// LastError is the error of the previous delivery's handler, if it
	// returned one (cut to about 1 KiB).
	LastError string
}

// Handler runs the intents of one kind; make it with Kind.Handle.
type Handler struct {
	kind string
	run  func(context.Context, *delivery) error
}

// Draft is an intent ready to be enqueued (Queue.Enqueue) or committed
// with a primary write (Queue.Commit). Make it with Kind.New.
type Draft struct {
	env envelope
	err error
}

// ID returns the draft's intent ID ("" when New failed).
func (d Draft) ID() string { return d.env.ID }

// Err returns the error New met, if any.
func (d Draft) Err() error { return d.err }

// envelope is an intent as it travels in a message: JSON, then base64
// (azqueue sends message text as it is, and XML-escaping would corrupt
// control characters and invalid UTF-8).
type envelope struct {
	V       int             `json:"v"`
	ID      string          `json:"id"`
	Kind    string          `json:"k"`
	Created time.Time       `json:"t"`
	Payload json.RawMessage `json:"p,omitempty"`
	// Blob names the blob that holds the payload (a claim check) when the
	// payload is too large for a message: see claimCheckName.
	Blob string `json:"b,omitempty"`
	// Commit says where the intent's commit record is (Commit's intents).
	Commit *commitRef `json:"c,omitempty"`
	// Released marks a committed intent's message: Commit's release step
	// sets it once the primary's batch is applied, so the worker need not
	// read the commit record.
	Released bool `json:"r,omitempty"`
	// LastError is the last failed delivery's error.
	LastError string `json:"e,omitempty"`
	// Abandoned counts the deliveries a worker's shutdown gave back
	// unfinished: they do not count toward MaxDeliveries.
	Abandoned int64 `json:"a,omitempty"`
	// TP and TS are the W3C traceparent and tracestate of the span that
	// enqueued or committed the intent, when it was traced: the worker's
	// span of the intent is its child. Messages without them (written
	// before, or untraced) run as any other.
	TP string `json:"tp,omitempty"`
	TS string `json:"ts,omitempty"`
}

// commitRef locates a commit record.
type commitRef struct {
	Table        string `json:"t"`
	PartitionKey string `json:"pk"`
}

func (e *envelope) text() (string, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// parseEnvelope reads a message's text, the count-th delivery of its
// message. Anything a Queue does not write is an error: a text longer
// than a message, a claim check not named for the intent's id, a commit
// reference whose PartitionKey is not a key, an abandon count above the
// deliveries. Nothing named in it has been checked against storage.
func parseEnvelope(text string, count int64) (envelope, error) {
	var e envelope
	if len(text) > MaxMessageSize {
		return e, fmt.Errorf("the message is %d bytes, more than a message's %d", len(text), MaxMessageSize)
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return e, fmt.Errorf("the message is not base64: %w", err)
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, fmt.Errorf("the message is not an intent: %w", err)
	}
	if e.V != 1 || validID(e.ID) != nil || validKind(e.Kind) != nil {
		return e, fmt.Errorf("the message is not an intent of version 1 with an id and a kind")
	}
	if e.Blob != "" && (!isClaimCheck(e.Blob, e.ID, e.Commit != nil) || len(e.Payload) != 0) {
		return e, fmt.Errorf("intent %s names blob %q, which is not a claim check of its id (%s<id>/<32 hex digits>, or %s<32 hex digits> with a commit reference; no inline payload)", e.ID, cutJSON(e.Blob, 128), claimCheckPrefix, commitMark)
	}
	if c := e.Commit; c != nil {
		// No Commit can target a reserved partition (every op's keys are
		// refused there), so a reference to one is forged.
		if c.Table == "" || c.PartitionKey == "" || keys.Validate(c.PartitionKey) != nil || strings.HasPrefix(c.PartitionKey, reserved.Prefix) {
			return e, fmt.Errorf("intent %s has a commit reference without a table, or with an invalid or reserved PartitionKey", e.ID)
		}
	}
	if e.Abandoned < 0 || e.Abandoned >= max(count, 1) {
		return e, fmt.Errorf("intent %s counts %d abandoned deliveries in its %d", e.ID, e.Abandoned, count)
	}
	return e, nil
}

// claimCheckPrefix starts the name of every claim-check blob.
const claimCheckPrefix = "intents/"

// commitMark marks the claim checks of Commit's intents: a message may use
// one only with a commit reference, so only the message its commit record
// names ever reads or empties it.
const commitMark = "commit-"

// claimCheckName is the name of intent id's claim check for one upload
// (suffix: 32 hex digits), marked when the intent is Commit's.
func claimCheckName(id, suffix string, committed bool) string {
	if committed {
		suffix = commitMark + suffix
	}
	return claimCheckPrefix + id + "/" + suffix
}

// isClaimCheck reports whether name is a claim check a Queue writes for
// intent id, with commitMark exactly when committed.
func isClaimCheck(name, id string, committed bool) bool {
	n := len(name) - 32
	return n >= 0 && validID(name[n:]) == nil && name == claimCheckName(id, name[n:], committed)
}

// isAnyClaimCheck reports whether name is a claim check of any intent.
func isAnyClaimCheck(name string) bool {
	rest, _ := strings.CutPrefix(name, claimCheckPrefix)
	id, _, _ := strings.Cut(rest, "/")
	return validID(id) == nil && (isClaimCheck(name, id, false) || isClaimCheck(name, id, true))
}

// newID returns 32 lower-case hex digits of randomness: valid in a RowKey
// and a blob name.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("eventual: making an intent id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func validID(id string) error {
	ok := len(id) == 32
	for i := 0; ok && i < len(id); i++ {
		ok = '0' <= id[i] && id[i] <= '9' || 'a' <= id[i] && id[i] <= 'f'
	}
	if !ok {
		return fmt.Errorf("%w: intent id %q is not 32 lower-case hex digits", ErrInvalid, cutJSON(id, 64))
	}
	return nil
}

func validKind(name string) error {
	if name == "" || len(name) > maxKindName {
		return fmt.Errorf("%w: kind name %q must have 1 to %d characters", ErrInvalid, name, maxKindName)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: kind name %q: only printable ASCII characters", ErrInvalid, name)
		}
	}
	return nil
}

// errorText is err's text without signatures, cut so that it takes at most
// maxErrorText bytes as a JSON string (escapes included): for what is
// stored (a message's last error, the poison queue, a commit record).
func errorText(err error) string { return cutJSON(redact.Text(err.Error()), maxErrorText) }

// cutJSON cuts s so that it takes at most n bytes as a JSON string.
func cutJSON(s string, n int) string {
	for {
		q, _ := json.Marshal(s)
		if len(q) <= n {
			return s
		}
		s = truncate(s, len(s)*3/4)
	}
}

// truncate cuts s to at most n bytes on a UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
