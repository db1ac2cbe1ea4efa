package redact_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit/internal/redact"
)

func TestURL(t *testing.T) {
	cases := map[string]string{
		"https://a.table.core.windows.net/t?sv=2019-02-02&sig=c2VjcmV0%2B&se=x": "https://a.table.core.windows.net/t?se=x&sig=REDACTED&sv=2019-02-02",
		"https://a/t?SIG=abc":                                          "https://a/t?SIG=REDACTED",
		"https://a/t?$filter=x":                                        "https://a/t?$filter=x",
		"http://[bad url with sig=secret":                              "(unparseable URL, REDACTED)",
		"https://a/t()?$filter=x":                                      "https://a/t()?$filter=x",
		"https://a/c?copy=https%3A%2F%2Fb%2Fd%3Fsig%3Dsecret%26se%3Dx": "https://a/c?copy=https%3A%2F%2Fb%2Fd%3Fsig%3DREDACTED%26se%3Dx",
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

func TestText(t *testing.T) {
	cases := map[string]string{
		"GET https://a/q/messages?sig=c2VjcmV0%2B&se=x\n":                                     "GET https://a/q/messages?sig=REDACTED&se=x\n",
		"copy source https%3A%2F%2Fa%2Fb%3Fsv%3D1%26sig%3Dc2VjcmV0%252B%26se%3Dx":             "copy source https%3A%2F%2Fa%2Fb%3Fsv%3D1%26sig%3DREDACTED%26se%3Dx",
		"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=c2VjcmV0==;EndpointSuffix=x": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=REDACTED;EndpointSuffix=x",
		"no secret; signature=fine, design=ok":                                                "no secret; signature=fine, design=ok",
		`"url":"https://a/t?SIG=abc"`:                                                         `"url":"https://a/t?SIG=REDACTED"`,
	}
	for in, want := range cases {
		if got := redact.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	err := redact.Error(errors.New("wrapped sig%3Dc2VjcmV0 here"))
	if strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("Error left a URL-encoded signature: %v", err)
	}
}

// azcore's *ResponseError text spans many lines and quotes the request URL:
// Error makes it one line, without the signature, and keeps the chain.
func TestErrorOneLine(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://a.blob.core.windows.net/c/b?sv=1&sig=c2VjcmV0&se=x", nil)
	resp := &http.Response{StatusCode: 403, Header: http.Header{"X-Ms-Error-Code": {"AuthorizationFailure"}}, Request: req,
		Body: io.NopCloser(strings.NewReader("<Error><Code>AuthorizationFailure</Code>\n<Message>no</Message></Error>"))}
	re := runtime.NewResponseError(resp)
	err := redact.Error(fmt.Errorf("reading: %w", re))
	text := err.Error()
	var got *azcore.ResponseError
	if strings.Contains(text, "\n") || strings.Contains(text, "c2VjcmV0") || !strings.Contains(text, "403 AuthorizationFailure") || !errors.As(err, &got) || got.StatusCode != 403 {
		t.Fatalf("Error = %q", text)
	}
	if direct := redact.Error(re).Error(); direct != "GET https://a.blob.core.windows.net/c/b: 403 AuthorizationFailure" {
		t.Fatalf("a bare ResponseError = %q", direct)
	}
}
