package obs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/redact"
	"go.opentelemetry.io/otel/attribute"
)

// elided stands for what Sanitize removes.
const elided = "…"

// Sanitize returns text as tablekit's telemetry records it: every span
// attribute, event attribute and status description that reaches a span
// through this package (tablekit's operations' spans and the azcore spans
// of their requests), and the error text of every log record, pass
// through it. A RowKey often holds personal data (an email, a name), and
// a query string a shared access signature, a filter's values or a pop
// receipt, so it removes:
//
//   - from every URL (http:// or https://), its query string, fragment and
//     user information, and all of its path after the table, queue or
//     container it addresses (after the account, which comes first in an
//     emulator's path-style URL on an IP address): an entity's keys, a
//     blob's name, a message's id. An entity's
//     https://a.table.core.windows.net/tbl(PartitionKey='Sales',RowKey='x')
//     becomes https://a.table.core.windows.net/tbl(…), a message's
//     https://a.queue.core.windows.net/q/messages/id?popreceipt=p
//     becomes https://a.queue.core.windows.net/q/…;
//   - every entity predicate outside a URL: (PartitionKey='a',RowKey='b')
//     becomes (…);
//   - every double-quoted string: tablekit's errors quote (%q) each key,
//     filter, cursor and name they give, and a transport error quotes its
//     URL, so their texts keep their shape without a key: table: get tbl
//     (PartitionKey "…", RowKey "…"): 404 ResourceNotFound;
//   - then every signature and account key left (redact.Text).
//
// The PartitionKey an operation addresses is recorded only as its
// tablekit.partition attribute. Sanitize is safe for concurrent use; a
// text without a double quote, a URL, a predicate, '=' or '%' is returned
// as it is, without allocating.
func Sanitize(text string) string {
	if strings.IndexByte(text, '"') >= 0 || strings.Contains(text, "://") || strings.Contains(text, "PartitionKey=") {
		text = elide(text)
	}
	if strings.ContainsAny(text, "=%") { // each text redact.Text looks for has one
		text = redact.Text(text)
	}
	return text
}

// elide removes text's URLs' parts, entity predicates and quoted strings
// (see Sanitize).
func elide(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	for {
		i := strings.IndexAny(text, `"hH(`) // where each starts
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		text = text[i:]
		n := 0
		switch {
		case text[0] == '"':
			if q, err := strconv.QuotedPrefix(text); err == nil {
				b.WriteString(`"` + elided + `"`)
				n = len(q)
			}
		case text[0] == '(':
			if strings.HasPrefix(text, "(PartitionKey=") {
				b.WriteString("(" + elided + ")")
				n = predicateEnd(text)
			}
		case hasURLScheme(text):
			n = urlEnd(text)
			b.WriteString(sanitizeURL(text[:n]))
		}
		if n == 0 {
			b.WriteByte(text[0])
			n = 1
		}
		text = text[n:]
	}
}

// hasURLScheme reports whether s starts with http:// or https://, in any
// case.
func hasURLScheme(s string) bool {
	for _, p := range [...]string{"http://", "https://"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}

// urlEnd is the length of the URL s starts with: up to a space, a double
// quote or an angle bracket, less the punctuation that ends a sentence or
// a clause (the ':' before an error's status, say).
func urlEnd(s string) int {
	n := strings.IndexAny(s, " \t\r\n\"<>`")
	if n < 0 {
		n = len(s)
	}
	for n > 0 && strings.IndexByte(".,:;'", s[n-1]) >= 0 {
		n--
	}
	return n
}

// predicateEnd is the length of the entity predicate s starts with
// ("(PartitionKey='a',RowKey='b')", its quotes doubled inside values), or
// up to the next space when it does not parse.
func predicateEnd(s string) int {
	in := false
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\'' && in && i+1 < len(s) && s[i+1] == '\'':
			i++ // a doubled quote inside a value
		case s[i] == '\'':
			in = !in
		case s[i] == ')' && !in:
			return i + 1
		}
	}
	if n := strings.IndexAny(s, " \t\r\n"); n >= 0 {
		return n
	}
	return len(s)
}

// sanitizeURL is raw (a URL) reduced to its scheme, host and the path up
// to the resource it addresses (see Sanitize). It parses no more of raw
// than that, and allocates only the result.
func sanitizeURL(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, path := rest[:end], rest[end:]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:] // no user information
	}
	if q := strings.IndexAny(path, "?#"); q >= 0 {
		path = path[:q]
	}
	var b strings.Builder
	b.Grow(len(scheme) + len(host) + len(path) + 8)
	b.WriteString(strings.ToLower(scheme))
	b.WriteString("://")
	if host == "" {
		b.WriteString(elided)
		return b.String()
	}
	b.WriteString(host)
	keep := 1 // the table, queue or container
	if isIP(host) {
		keep = 2 // an emulator's path-style URL: the account first
	}
	path = strings.TrimPrefix(path, "/")
	for i := 0; ; i++ {
		seg, more, found := strings.Cut(path, "/")
		if i == keep {
			if seg != "" || found {
				b.WriteString("/" + elided)
			}
			return b.String()
		}
		// A table's segment may end with an entity predicate (or, escaped,
		// anything): keep its name.
		if p := strings.IndexAny(seg, "(%"); p >= 0 && seg[p:] != "()" {
			b.WriteByte('/')
			b.WriteString(seg[:p])
			b.WriteString("(" + elided + ")")
		} else if seg != "" || i == 0 {
			b.WriteByte('/')
			b.WriteString(seg)
		}
		if !found {
			return b.String()
		}
		path = more
	}
}

// isIP reports whether host (with or without a port) is an IP address.
func isIP(host string) bool {
	switch {
	case host[0] == '[':
		return true // IPv6
	case host[0] < '0' || host[0] > '9':
		return false // a name (and no error to allocate)
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// sanitizeKVs applies Sanitize to the string values of kvs, in place.
func sanitizeKVs(kvs []attribute.KeyValue) []attribute.KeyValue {
	for i, kv := range kvs {
		switch kv.Value.Type() {
		case attribute.STRING:
			if s := kv.Value.AsString(); s != "" {
				kvs[i] = kv.Key.String(Sanitize(s))
			}
		case attribute.STRINGSLICE:
			ss := kv.Value.AsStringSlice() // a copy
			for j := range ss {
				ss[j] = Sanitize(ss[j])
			}
			kvs[i] = kv.Key.StringSlice(ss)
		}
	}
	return kvs
}

// sanitizeAttrs returns azcore's attrs with Sanitize applied to every value
// that is not a number or a bool (azotel records those as text).
func sanitizeAttrs(attrs []tracing.Attribute) []tracing.Attribute {
	out := make([]tracing.Attribute, len(attrs))
	for i, a := range attrs {
		switch v := a.Value.(type) {
		case int, int64, float64, bool:
		case string:
			a.Value = Sanitize(v)
		default:
			a.Value = Sanitize(fmt.Sprint(v))
		}
		out[i] = a
	}
	return out
}
