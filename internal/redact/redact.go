// Package redact removes shared access signatures and account keys from
// URLs and from the errors that carry them, so that no error or log line
// tablekit produces holds a usable credential. Transport errors of net/http
// (*url.Error) embed the whole request URL, query string included; a SAS
// client's query string holds the signature. azcore's *ResponseError texts
// quote the request URL too. Every place where an SDK error enters
// tablekit's code calls Error (errors) or Text (log attributes, events, and
// any text that is stored).
//
// A secret is the value of a signature parameter (sig) or of an account key
// (AccountKey, in a connection string), in any case and in any encoding a
// text may carry it in: raw, percent-encoded any number of times (a SAS URL
// inside another URL's query, as a proxy's upstream, is encoded twice),
// with a percent-encoded parameter name (%73ig=, %53IG=) or separators
// (%26sig%3D), HTML-escaped (&amp;sig=). The guarantee: neither a redacted text nor any of its
// percent-decodings (each %XX decoded, repeatedly) holds sig= or
// AccountKey= (not preceded by a letter) followed by a value other than
// Placeholder, the value ending at '&', ';', white space or a quote. The
// forms URLs make are redacted in place, the text around them kept; a
// field (a run of text between white space) that still decodes to a secret
// after that, or is still percent-encoded after maxDecodings decodings, is
// replaced whole by Placeholder. A text without a secret is returned as it
// is, without allocating when it holds no percent escape.
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

// URL returns s with the value of every signature parameter (sig)
// replaced by Placeholder, also in URLs encoded in its parameters' values,
// and any other secret as Text removes it. A string that does not parse as
// a URL but holds a secret is replaced whole.
func URL(s string) string {
	if !leaks(s) {
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

// Error redacts the URL of every *url.Error in err's chain, in place (the
// http client makes a new *url.Error for each request, so nobody else holds
// it). If err's text still holds a secret (a wrapper formatted it before
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
	if !leaks(text) && !strings.Contains(text, "\n") {
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

// secret matches a secret in the forms URLs make: group 1 is what precedes
// it (the text's start, a character other than a letter, or a
// percent-encoded character such as %3F or %26, encoded any number of
// times) and its name with '=': sig (each letter raw or percent-encoded
// any number of times, %2573 being an 's' encoded twice) or accountkey,
// then '=' raw or encoded (%3D, %253D, ...). The value that follows runs up
// to '&', ';', white space, a quote or a '%' that does not start an escape,
// or to an encoded '&' or ';' (%26, %2526, %3B, ...): a nested URL's
// separator, encoded as deep as its parameters.
var secret = regexp.MustCompile(`(?i)((?:^|[^a-z]|%(?:25)*[0-9a-f]{2})` +
	`(?:(?:s|%(?:25)*[57]3)(?:i|%(?:25)*[46]9)(?:g|%(?:25)*[46]7)|accountkey)(?:=|%(?:25)*3d))` +
	`(?:[^&;\s"'%]|%(?:25)*(?:[014-9a-f][0-9a-f]|2[0-47-9a-f]|3[0-9ac-f]))+`)

// Text returns s without secrets (see the package documentation): each
// signature and account key value replaced by Placeholder, for log
// attributes, events and anything stored (a message's last error, a poison
// record) that may quote an SDK error.
func Text(s string) string {
	if !leaks(s) {
		return s
	}
	out := secret.ReplaceAllString(s, "${1}"+Placeholder)
	if !leaks(out) {
		return out
	}
	return fields(out)
}

// fields replaces each field of s that leaks by Placeholder: the forms that
// secret does not match (an escape whose own characters are escaped, a
// name encoded in parts), which no URL makes.
func fields(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexAny(s, spaces)
		if i == 0 {
			b.WriteByte(s[0])
			s = s[1:]
			continue
		}
		if i < 0 {
			i = len(s)
		}
		if f := s[:i]; leaks(f) {
			b.WriteString(Placeholder)
		} else {
			b.WriteString(f)
		}
		s = s[i:]
	}
	return b.String()
}

// spaces are the white space characters that end a value (regexp's \s).
const spaces = " \t\n\f\r"

// maxDecodings bounds the percent-decodings leaks looks through: a text
// still encoded after as many is taken to hide a secret.
const maxDecodings = 8

// leaks reports whether s, or one of its percent-decodings, holds a secret
// value other than Placeholder (see the package documentation), or s is
// still percent-encoded after maxDecodings decodings.
func leaks(s string) bool {
	for i := 0; ; i++ {
		if holdsSecret(s) {
			return true
		}
		d, ok := unescape(s)
		if !ok {
			return false
		}
		if i == maxDecodings {
			return true
		}
		s = d
	}
}

// holdsSecret reports whether s holds sig= or accountkey= (in any case, not
// preceded by a letter) followed by a value other than "" and
// Placeholder, the value ending at '&', ';', white space or a quote.
func holdsSecret(s string) bool {
	for i := strings.IndexByte(s, '='); i >= 0; {
		if named(s[:i], "sig") || named(s[:i], "accountkey") {
			v := s[i+1:]
			if end := strings.IndexAny(v, "&;\"'"+spaces); end >= 0 {
				v = v[:end]
			}
			if v != "" && v != Placeholder {
				return true
			}
		}
		j := strings.IndexByte(s[i+1:], '=')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// named reports whether s ends with name (in any case) not preceded by a
// letter.
func named(s, name string) bool {
	n := len(s) - len(name)
	return n >= 0 && strings.EqualFold(s[n:], name) && (n == 0 || !isLetter(s[n-1]))
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// unescape decodes every valid percent escape (%XX) of s and keeps every
// other byte; ok is false when s holds none (then nothing is allocated).
func unescape(s string) (_ string, ok bool) {
	first := -1
	for i := strings.IndexByte(s, '%'); i >= 0 && i+2 < len(s); {
		if isHex(s[i+1]) && isHex(s[i+2]) {
			first = i
			break
		}
		j := strings.IndexByte(s[i+1:], '%')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if first < 0 {
		return s, false
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:first]...)
	for i := first; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// redacted is an error with a text of one line without signatures.
type redacted struct {
	err  error
	text string
}

func (r *redacted) Error() string { return r.text }
func (r *redacted) Unwrap() error { return r.err }
