// Package redact removes shared access signatures from URLs and from the
// errors that carry them, so that no error or log line tablekit produces
// holds a usable credential. Transport errors of net/http (*url.Error) embed
// the whole request URL, query string included; a SAS client's query string
// holds the signature. azcore's *ResponseError texts quote the request URL
// too. Every place where an SDK error enters tablekit's code calls Error
// (errors) or Text (log attributes, events, and any text that is stored).
package redact

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Placeholder replaces each redacted value.
const Placeholder = "REDACTED"

// URL returns s with the value of every signature parameter (sig) replaced
// by Placeholder, also in URLs encoded in its parameters' values. A string that does not parse as a URL but mentions sig=
// is replaced whole.
func URL(s string) string {
	if !mentionsSig(s) {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL, " + Placeholder + ")"
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "sig") {
			q[k] = []string{Placeholder}
		}
	}
	u.RawQuery = q.Encode()
	return Text(u.String()) // signatures of URLs encoded in parameter values
}

func mentionsSig(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "sig=") || strings.Contains(l, "sig%3d") || strings.Contains(l, "accountkey=")
}

// Error redacts the URL of every *url.Error in err's chain, in place (the
// http client makes a new *url.Error for each request, so nobody else holds
// it). If err's text still holds a signature (a wrapper formatted it before
// this call), or spans several lines (azcore's *ResponseError dumps the
// request, the response and its body), the result wraps err with a
// redacted text of one line: for a *ResponseError, its request's method
// and URL (without the query), its status and its error code. errors.Is and errors.As see the
// same chain as before.
func Error(err error) error {
	for e := err; e != nil; {
		var ue *url.Error
		if !errors.As(e, &ue) {
			break
		}
		ue.URL = URL(ue.URL)
		e = ue.Err
	}
	if err == nil {
		return nil
	}
	text := err.Error()
	if !mentionsSig(text) && !strings.Contains(text, "\n") {
		return err
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		text = strings.Replace(text, re.Error(), responseLine(re), 1)
	}
	return &redacted{err: err, text: Text(strings.Join(strings.Fields(text), " "))}
}

// responseLine is a *ResponseError in one line.
func responseLine(re *azcore.ResponseError) string {
	line := fmt.Sprintf("%d %s", re.StatusCode, re.ErrorCode)
	if re.ErrorCode == "" {
		line = fmt.Sprintf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
	}
	if r := re.RawResponse; r != nil && r.Request != nil {
		u := *r.Request.URL
		u.RawQuery = "" // as azcore's own text: no signature, no filter
		line = r.Request.Method + " " + u.String() + ": " + line
	}
	return line
}

// secret matches the value of a signature parameter, raw (sig=...) or
// URL-encoded once (sig%3D..., ending at an encoded '&'), and an account
// key in a connection string (AccountKey=...;).
var secret = regexp.MustCompile(`(?i)((?:^|[^a-z]|%3F|%26)(?:sig=|sig%3D|accountkey=))(?:[^&;\s"'%]|%(?:[013-9a-f][0-9a-f]|2[0-57-9a-f]))*`)

// Text returns s with every signature value (sig= and sig%3D) and account
// key (AccountKey=) replaced by Placeholder: for log attributes, events and
// anything stored (a message's last error, a poison record) that may quote
// an SDK error.
func Text(s string) string {
	if !mentionsSig(s) {
		return s
	}
	return secret.ReplaceAllString(s, "${1}"+Placeholder)
}

// redacted is an error with a text of one line without signatures.
type redacted struct {
	err  error
	text string
}

func (r *redacted) Error() string { return r.text }
func (r *redacted) Unwrap() error { return r.err }
