package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/tablekit/tablekit/internal/redact"
)

func TestURL(t *testing.T) {
	cases := map[string]string{
		"https://a.table.core.windows.net/t?sv=2019-02-02&sig=c2VjcmV0%2B&se=x": "https://a.table.core.windows.net/t?se=x&sig=REDACTED&sv=2019-02-02",
		"https://a/t?SIG=abc":                 "https://a/t?SIG=REDACTED",
		"https://a/t?$filter=x":               "https://a/t?$filter=x",
		"http://[bad url with sig=secret":     "(unparseable URL, REDACTED)",
		"https://a/t()?$filter=sig%3Dnothing": "https://a/t()?$filter=sig%3Dnothing",
	}
	for in, want := range cases {
		if got := redact.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorRedactsNestedURLErrors(t *testing.T) {
	ue := &url.Error{Op: "Get", URL: "https://a/t?sig=secret&sp=r", Err: syscall.ECONNRESET}
	err := redact.Error(fmt.Errorf("wrapped: %w", ue))
	if strings.Contains(err.Error(), "secret") || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Error = %v", err)
	}
	var got *url.Error
	if !errors.As(err, &got) || strings.Contains(got.URL, "secret") {
		t.Fatalf("the wrapped *url.Error still holds the signature: %v", got)
	}
	if redact.Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
}
