package eventual

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/reserved"
)

// The recorded error fits its budget as JSON, however it escapes, so a
// message with it still fits the queue.
func TestErrorTextFitsAsJSON(t *testing.T) {
	for _, s := range []string{strings.Repeat("x", 5000), strings.Repeat("\x01", 5000), strings.Repeat("é\"", 3000), "short"} {
		got := errorText(errors.New(s))
		q, _ := json.Marshal(got)
		if len(q) > maxErrorText || !utf8.ValidString(got) || !strings.HasPrefix(s, got) || len(got) == 0 {
			t.Errorf("errorText(%.10q...) = %d bytes, %d as JSON", s, len(got), len(q))
		}
	}
	big := Draft{env: envelope{V: 1, ID: strings.Repeat("a", 32), Kind: "k", Payload: json.RawMessage(`"` + strings.Repeat("y", maxEnvelope-200) + `"`)}}
	big.env.LastError = errorText(errors.New(strings.Repeat("\x01", 5000)))
	big.env.Released = true
	text, err := big.env.text()
	if err != nil || len(text) > MaxMessageSize {
		t.Fatalf("the largest inline envelope with an error is %d characters, more than %d (%v)", len(text), MaxMessageSize, err)
	}
}

// parseEnvelope accepts what a Queue writes and refuses anything else a
// queue writer could put in a message.
func TestParseEnvelope(t *testing.T) {
	id, suffix := strings.Repeat("a", 32), strings.Repeat("0", 32)
	ok := func(e envelope) string {
		text, err := e.text()
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	base := envelope{V: 1, ID: id, Kind: "k", Payload: json.RawMessage(`1`)}
	with := func(f func(*envelope)) string {
		e := base
		f(&e)
		return ok(e)
	}
	good := map[string]string{
		"inline":      ok(base),
		"claim check": with(func(e *envelope) { e.Payload, e.Blob = nil, claimCheckName(id, suffix, false) }),
		"commit claim check": with(func(e *envelope) {
			e.Payload, e.Blob, e.Commit = nil, claimCheckName(id, suffix, true), &commitRef{"t", "p"}
		}),
		"abandoned once": with(func(e *envelope) { e.Abandoned = 1 }),
	}
	for name, text := range good {
		if _, err := parseEnvelope(text, 2); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]string{
		"too long":          strings.Repeat("A", MaxMessageSize+4),
		"not base64":        "!!",
		"not JSON":          "AAAA",
		"version 2":         with(func(e *envelope) { e.V = 2 }),
		"upper-case id":     with(func(e *envelope) { e.ID = strings.ToUpper(strings.Repeat("c", 32)) }),
		"short id":          with(func(e *envelope) { e.ID = "abc" }),
		"no kind":           with(func(e *envelope) { e.Kind = "" }),
		"blob and payload":  with(func(e *envelope) { e.Blob = claimCheckName(id, suffix, false) }),
		"another id's blob": with(func(e *envelope) { e.Payload, e.Blob = nil, claimCheckName(strings.Repeat("b", 32), suffix, false) }),
		"any blob":          with(func(e *envelope) { e.Payload, e.Blob = nil, "secret.json" }),
		"longer suffix":     with(func(e *envelope) { e.Payload, e.Blob = nil, claimCheckName(id, suffix+"0", false) }),
		"nested name":       with(func(e *envelope) { e.Payload, e.Blob = nil, claimCheckName(id, "x/"+suffix, false) }),
		"commit's, no ref":  with(func(e *envelope) { e.Payload, e.Blob = nil, claimCheckName(id, suffix, true) }),
		"enqueued's, with ref": with(func(e *envelope) {
			e.Payload, e.Blob, e.Commit = nil, claimCheckName(id, suffix, false), &commitRef{"t", "p"}
		}),
		"invalid partition":      with(func(e *envelope) { e.Commit = &commitRef{"t", "a/b"} }),
		"empty partition":        with(func(e *envelope) { e.Commit = &commitRef{"t", ""} }),
		"reserved partition":     with(func(e *envelope) { e.Commit = &commitRef{"t", reserved.Prefix + "ix!Last!Jones"} }),
		"no table":               with(func(e *envelope) { e.Commit = &commitRef{"", "p"} }),
		"abandoned too often":    with(func(e *envelope) { e.Abandoned = 2 }),
		"negative abandon count": with(func(e *envelope) { e.Abandoned = -1 }),
	}
	for name, text := range bad {
		if _, err := parseEnvelope(text, 2); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, want := range map[string]bool{
		claimCheckName(id, suffix, false): true, claimCheckName(id, suffix, true): true,
		"intents/" + id: false, "intents/" + id + "/": false, "intents//" + suffix: false, "x" + claimCheckName(id, suffix, false): false,
	} {
		if isAnyClaimCheck(name) != want {
			t.Errorf("isAnyClaimCheck(%q) = %v", name, !want)
		}
	}
}
