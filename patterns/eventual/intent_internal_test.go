package eventual

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
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
