package redact_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
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

// TestTextCorpus: every encoding in which a signature or an account key
// reaches an error or log text (raw, URL-encoded once, twice or three
// times, as a SAS URL carried in another URL's query, with a
// percent-encoded or upper-case parameter name, HTML-escaped in an XML
// body, quoted by a transport error, in a connection string) loses its
// value; the text around it stays where the encoding is one a URL makes.
// want "" checks only that the secrets are gone.
func TestTextCorpus(t *testing.T) {
	once, twice := url.QueryEscape, func(s string) string { return url.QueryEscape(url.QueryEscape(s)) }
	sas := "https://a.blob.core.windows.net/c/b?sv=2021-08-06&se=2030-01-01&sig=SaSsEcReT%2Bb64%2F%3D&sp=r"
	cases := []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"raw", "GET https://a/t?sv=1&sig=RawSecret1&se=x", []string{"RawSecret1"}, "GET https://a/t?sv=1&sig=REDACTED&se=x"},
		{"raw, upper-case name", "https://a/t?SIG=UpperSecret&se=x", []string{"UpperSecret"}, "https://a/t?SIG=REDACTED&se=x"},
		{"raw, encoded base64 value", "https://a/t?sig=PartOne%2BPartTwo%2FPartThree%3D%3D&se=x", []string{"PartOne", "PartTwo", "PartThree"}, "https://a/t?sig=REDACTED&se=x"},
		{"once", "copy source " + once(sas), []string{"SaSsEcReT"}, "copy source " + strings.Replace(once(sas), once("SaSsEcReT%2Bb64%2F%3D"), "REDACTED", 1)},
		{"twice (a proxy's upstream)", "https://proxy/fwd?upstream=" + twice(sas), []string{"SaSsEcReT"}, "https://proxy/fwd?upstream=" + strings.Replace(twice(sas), twice("SaSsEcReT%2Bb64%2F%3D"), "REDACTED", 1)},
		{"twice, the issue's text", "x%2526sig%253DTwiceEncodedSecret42%2526se%253Dx", []string{"TwiceEncodedSecret42"}, "x%2526sig%253DREDACTED%2526se%253Dx"},
		{"three times", "u=" + url.QueryEscape(twice(sas)), []string{"SaSsEcReT"}, ""},
		{"encoded name", "https://a/t?sv=1&%73ig=NameSecret4&se=x", []string{"NameSecret4"}, "https://a/t?sv=1&%73ig=REDACTED&se=x"},
		{"encoded upper-case name", "https://a/t?%53IG=UpperName5&se=x", []string{"UpperName5"}, "https://a/t?%53IG=REDACTED&se=x"},
		{"every letter encoded", "https://a/t?%53%49%47%3DLetters6&se=x", []string{"Letters6"}, "https://a/t?%53%49%47%3DREDACTED&se=x"},
		{"encoded name, twice", "u=https%3A%2F%2Fa%2Ft%3F%2573ig%253DNameTwice7%2526se%3Dx", []string{"NameTwice7"}, ""},
		{"lower-case escapes", "u=https%3a%2f%2fa%2ft%3fsig%3dLowerHex8%26se%3dx", []string{"LowerHex8"}, "u=https%3a%2f%2fa%2ft%3fsig%3dREDACTED%26se%3dx"},
		{"HTML-escaped ampersand", "<Url>https://a/t?sv=1&amp;sig=HtmlSecret9&amp;se=x</Url>", []string{"HtmlSecret9"}, "<Url>https://a/t?sv=1&amp;sig=REDACTED&amp;se=x</Url>"},
		{"a transport error", `Get "https://a/t?sig=Quoted10": dial tcp: connection refused`, []string{"Quoted10"}, `Get "https://a/t?sig=REDACTED": dial tcp: connection refused`},
		{"a proxied transport error", `Get "http://proxy/?u=` + twice(sas) + `": EOF`, []string{"SaSsEcReT"}, ""},
		{"JSON", `{"url":"https://a/t?sig=Json11"}`, []string{"Json11"}, `{"url":"https://a/t?sig=REDACTED"}`},
		{"connection string", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=S2V5+/Key12==;EndpointSuffix=x", []string{"S2V5", "Key12"}, "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=REDACTED;EndpointSuffix=x"},
		{"connection string, lower-case", "accountname=a;accountkey=Lower13==", []string{"Lower13"}, "accountname=a;accountkey=REDACTED"},
		{"connection string, encoded", "cs=" + once("AccountName=a;AccountKey=Enc14+/==;EndpointSuffix=x"), []string{"Enc14"}, "cs=" + strings.Replace(once("AccountName=a;AccountKey=Enc14+/==;EndpointSuffix=x"), once("Enc14+/=="), "REDACTED", 1)},
		{"connection string, encoded twice", "cs=" + twice("AccountName=a;AccountKey=Twice15+/==;EndpointSuffix=x"), []string{"Twice15"}, ""},
		{"account key name encoded", "Account%4Bey=Hidden16==;x", []string{"Hidden16"}, ""},
		{"mixed depths", "u=%25%37%33ig%3DMixed17", []string{"Mixed17"}, ""},
		{"encoded escape of the name", "u=%2525%37%33ig%253DDeep18", []string{"Deep18"}, ""},
		{"several", "sig=One19&x=" + once("?sig=Two20&y=") + twice("&sig=Three21"), []string{"One19", "Two20", "Three21"}, ""},
		// Nothing to redact: unchanged.
		{"prose", "no secret; signature=fine, design=ok", nil, "no secret; signature=fine, design=ok"},
		{"a filter", "GET https://a/t()?$filter=PartitionKey%20eq%20%27p%27&$top=1", nil, "GET https://a/t()?$filter=PartitionKey%20eq%20%27p%27&$top=1"},
		{"another parameter", "https://a/t?xsig=notasig&sigma=x", nil, "https://a/t?xsig=notasig&sigma=x"},
		{"empty value", "https://a/t?sig=&se=x", nil, "https://a/t?sig=&se=x"},
	}
	for _, c := range cases {
		got := redact.Text(c.in)
		for _, s := range c.secrets {
			if strings.Contains(got, s) {
				t.Errorf("%s: Text(%q) = %q still holds %q", c.name, c.in, got, s)
			}
		}
		if c.want != "" && got != c.want {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		if leaked, _ := decodableSecret(got); leaked != "" {
			t.Errorf("%s: Text(%q) = %q, which decodes to %q", c.name, c.in, got, leaked)
		}
		// The same through a transport error and Error.
		err := redact.Error(&url.Error{Op: "Get", URL: c.in, Err: syscall.ECONNREFUSED})
		for _, s := range c.secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: Error of a *url.Error = %q still holds %q", c.name, err, s)
			}
		}
	}
}

// decodableSecret is the property redact keeps, computed independently of
// it: the text and each of its percent-decodings (a valid %XX decoded, any
// other byte kept, until nothing changes) hold no signature or account
// key (sig= or accountkey=, any case, not preceded by a letter) whose value
// (up to '&', ';', white space or a quote) is other than empty or
// redact.Placeholder. It returns the first such value it finds, or "",
// and how many decodings changed the text.
func decodableSecret(s string) (string, int) {
	for depth := 0; ; depth++ {
		l := []byte(s) // lower-cased ASCII letters, every byte in place
		for i, c := range l {
			if 'A' <= c && c <= 'Z' {
				l[i] = c + 'a' - 'A'
			}
		}
		for _, name := range []string{"sig=", "accountkey="} {
			for i := 0; ; {
				j := strings.Index(string(l[i:]), name)
				if j < 0 {
					break
				}
				j += i
				i = j + 1
				if j > 0 && 'a' <= l[j-1] && l[j-1] <= 'z' {
					continue
				}
				v := s[j+len(name):]
				if end := strings.IndexAny(v, "&; \t\n\f\r\"'"); end >= 0 {
					v = v[:end]
				}
				if v != "" && v != redact.Placeholder {
					return v, depth
				}
			}
		}
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				h, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
				b.WriteByte(byte(h))
				i += 2
				continue
			}
			b.WriteByte(s[i])
		}
		if b.String() == s {
			return "", depth
		}
		s = b.String()
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// FuzzText: Text never panics, never leaves a decodable signature or
// account key (decodableSecret), and leaves a text without one as it is
// (unless it is still encoded after redact's bound on decodings).
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"https://a/t?sv=1&sig=abc&se=x", "x%2526sig%253DTwiceEncodedSecret42", "&%73ig=x", "%53IG%3Dx", "AccountKey=k==;x",
		"u=%25%37%33ig%3Dx", "%25252525252525252525252573ig=x", "%2525252525252525000", "sig=a%zz&sig=b", "no secret here", "%", "sig=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := redact.Text(s)
		if leaked, _ := decodableSecret(got); leaked != "" {
			t.Fatalf("Text(%q) = %q, which decodes to the value %q", s, got, leaked)
		}
		if leaked, depth := decodableSecret(s); leaked == "" && depth <= redact.MaxDecodings && got != s {
			t.Fatalf("Text(%q) = %q: changed a text without a secret", s, got)
		}
	})
}

// BenchmarkText: the common path (an error text without a secret, with and
// without escapes) and texts with a signature.
func BenchmarkText(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"plain", `table: get t (PartitionKey "p", RowKey "r"): 404 ResourceNotFound`},
		{"escaped URL", `Get "https://a.table.core.windows.net/t()?$filter=PartitionKey%20eq%20%27p%27%20and%20RowKey%20ge%20%27r%27&$top=1000": dial tcp: connection refused`},
		{"signature", `Get "https://a.table.core.windows.net/t?sv=2021-08-06&sig=c2VjcmV0%2Bc2VjcmV0%2F%3D&se=x": dial tcp: connection refused`},
		{"nested twice", `Get "http://proxy/?u=https%253A%252F%252Fa%252Ft%253Fsv%253D1%2526sig%253DTwiceEncodedSecret42%2526se%253Dx": EOF`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				redact.Text(c.s)
			}
		})
	}
}
