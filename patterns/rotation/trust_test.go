package rotation_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestKeyErrors: an entity or op with invalid keys fails Insert and
// Submit with both ErrInvalid and table.ErrInvalidKey, before anything is
// sent (Submit sends no create either).
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31)
	r := f.tables(t, nil)
	ctx := context.Background()
	tb, err := table.New[login](table.NewClient(f.svc, "any"), nil)
	if err != nil {
		t.Fatal(err)
	}
	second := func(_ any, err error) error { return err }
	for what, err := range map[string]error{
		"Insert, '/' in the RowKey":        second(r.Insert(ctx, jul31, login{User: "u", At: "bad/key"})),
		"Insert, an empty PartitionKey":    second(r.Insert(ctx, jul31, login{At: "1"})),
		"Submit, '#' in the PartitionKey":  second(r.Submit(ctx, jul31, []table.Op{tb.InsertOp(login{User: "u", At: "1"}), tb.InsertOp(login{User: "a#b", At: "1"})}, nil)),
		"Submit, a delete of an empty key": second(r.Submit(ctx, jul31, []table.Op{r.Table(jul31).DeleteOp("", "1", "*")}, nil)),
	} {
		if !errors.Is(err, rotation.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: %v, want ErrInvalid and table.ErrInvalidKey", what, err)
		}
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestSASSignatureNeverInErrors: over a plain SDK service client
// authorised by an account SAS, every operation fails (a refused
// connection, whose *url.Error quotes the request URL, or an error status)
// without the signature, raw or URL-encoded, in its error: also Prepare's
// and Insert's table creation, where the SDK's error enters this package
// directly.
func TestSASSignatureNeverInErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31)
	cred, err := aztables.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := aztables.AccountSASSignatureValues{
		Protocol: aztables.SASProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour),
		Permissions:   aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true}.String(),
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
		Services:      "t",
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	sig := qp.Signature()
	if sig == "" {
		t.Fatal("no signature")
	}
	leaks := func(s string) bool { return strings.Contains(s, sig) || strings.Contains(s, url.QueryEscape(sig)) }
	ctx := context.Background()
	for _, mode := range []string{"refused connection", "error status"} {
		ft := &faults.Transport{}
		if mode == "error status" {
			for range 100 {
				ft.Inject(faults.Fault{Status: http.StatusForbidden, ErrorCode: "AuthenticationFailed"})
			}
		}
		o := &aztables.ClientOptions{}
		o.Transport = ft
		o.Retry.MaxRetries = -1 // the SDK's own policy, as a plain client has it, without its waits
		svc, err := aztables.NewServiceClientWithNoCredential("http://127.0.0.1:1/"+emulator.DevAccount+"/?"+qp.Encode(), o)
		if err != nil {
			t.Fatal(err)
		}
		if mode == "error status" {
			ft.Next = refused{} // every request is answered by a fault
		}
		r, err := rotation.New[login](svc, f.prefix, &rotation.Options{Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		tb, _ := table.New[login](table.NewClient(svc, "any"), nil)
		ops := map[string]func() error{
			"Prepare": func() error { return r.Prepare(ctx, jul31) },
			"Insert":  func() error { _, err := r.Insert(ctx, jul31, loginAt("u", jul31, "ip")); return err },
			"Submit": func() error {
				_, err := r.Submit(ctx, jul31, []table.Op{tb.InsertOp(loginAt("u", jul31, "ip"))}, nil)
				return err
			},
			"Periods": func() error { _, err := r.Periods(ctx); return err },
			"Range": func() error {
				for _, err := range r.Range(ctx, jul31, aug1, nil) {
					return err
				}
				return nil
			},
			"Sweep": func() error {
				_, err := r.Sweep(ctx, &rotation.SweepOptions{Before: jul30.Add(-48 * time.Hour)})
				return err
			},
		}
		for op, fn := range ops {
			err := fn()
			if err == nil {
				t.Fatalf("%s, %s: no error", mode, op)
			}
			if leaks(err.Error()) {
				t.Errorf("%s, %s: the signature is in the error: %v", mode, op, err)
			}
			var ue *url.Error
			if errors.As(err, &ue) && leaks(ue.URL) {
				t.Errorf("%s, %s: the signature is in the wrapped *url.Error: %s", mode, op, ue.URL)
			}
		}
		if ft.Count() == 0 {
			t.Fatalf("%s: no request was sent", mode)
		}
	}
}

// refused is a transport that never reaches a server: the faults answer
// first.
type refused struct{}

func (refused) Do(*http.Request) (*http.Response, error) {
	return nil, errors.New("refused: a fault should have answered")
}
