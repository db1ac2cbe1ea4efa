// Package redact removes shared access signatures from URLs and from the
// errors that carry them, so that no error or log line tablekit produces
// holds a usable credential. Transport errors of net/http (*url.Error) embed
// the whole request URL, query string included; a SAS client's query string
// holds the signature.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Placeholder replaces each redacted value.
const Placeholder = "REDACTED"

// URL returns s with the value of every signature parameter (sig) replaced
// by Placeholder. A string that does not parse as a URL but mentions sig=
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
	return u.String()
}

func mentionsSig(s string) bool {
	return strings.Contains(strings.ToLower(s), "sig=")
}

// Error redacts the URL of every *url.Error in err's chain, in place (the
// http client makes a new *url.Error for each request, so nobody else holds
// it). If err's text still holds a signature (a wrapper formatted it before
// this call), the result wraps err with a redacted text. errors.Is and
// errors.As see the same chain as before.
func Error(err error) error {
	for e := err; e != nil; {
		var ue *url.Error
		if !errors.As(e, &ue) {
			break
		}
		ue.URL = URL(ue.URL)
		e = ue.Err
	}
	if err != nil && mentionsSig(err.Error()) {
		return &redacted{err}
	}
	return err
}

var sigValue = regexp.MustCompile(`(?i)(sig=)[^&\s"']*`)

// redacted is an error whose text has its signatures removed.
type redacted struct{ err error }

func (r *redacted) Error() string {
	return sigValue.ReplaceAllString(r.err.Error(), "${1}"+Placeholder)
}
func (r *redacted) Unwrap() error { return r.err }
