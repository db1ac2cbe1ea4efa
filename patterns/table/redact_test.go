package table_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// TestSASSignatureNeverInErrors sends every kind of operation through a
// SAS client to an endpoint that refuses connections: the transport errors
// (which embed the request URL) must not carry the signature, in their
// text or in the *url.Error they wrap; nor may retry's hook events.
func TestSASSignatureNeverInErrors(t *testing.T) {
	t.Parallel()
	cred, err := aztables.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	sas, err := table.SASURL("http://127.0.0.1:1/devstoreaccount1", cred, "nowhere", table.SASOptions{
		Permissions: aztables.SASPermissions{Read: true, Add: true, Update: true, Delete: true},
		Expiry:      time.Now().Add(time.Hour), AllowHTTP: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(sas)
	sig := u.Query().Get("sig")
	if sig == "" {
		t.Fatalf("no signature in %s", sas)
	}
	leaks := func(s string) bool { return strings.Contains(s, sig) || strings.Contains(s, url.QueryEscape(sig)) }
	var events []retry.Event
	p := fastRetry
	p.OnRetry = func(e retry.Event) { events = append(events, e) }
	opts := &aztables.ClientOptions{}
	p.ApplyTo(&opts.ClientOptions)
	c, err := table.NewClientFromSASURL(sas, opts)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[counter](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e := counter{PartitionKey: "p", RowKey: "r"}
	ops := map[string]func() error{
		"insert": func() error { _, err := tb.Insert(ctx, e); return err },
		"upsert": func() error { _, err := tb.Upsert(ctx, e, table.Merge); return err },
		"update": func() error { _, err := tb.Update(ctx, e, "W/\"x\"", table.Merge); return err },
		"delete": func() error { return tb.Delete(ctx, "p", "r", azcore.ETagAny) },
		"get":    func() error { _, err := tb.Get(ctx, "p", "r", nil); return err },
		"get with select": func() error {
			_, err := tb.Get(ctx, "p", "r", &table.GetOptions{Select: []string{"N"}})
			return err
		},
		"query": func() error { _, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("p")}); return err },
		"submit": func() error {
			_, err := tb.Submit(ctx, []table.Op{tb.InsertOp(e)}, nil)
			return err
		},
		"fan-out": func() error {
			for _, err := range tb.FanOut(ctx, []*table.Query{{Filter: table.PartitionKey("p")}}, nil) {
				return err
			}
			return nil
		},
	}
	for name, op := range ops {
		err := op()
		if err == nil {
			t.Fatalf("%s: no error from a refused connection", name)
		}
		if leaks(err.Error()) {
			t.Errorf("%s: the signature is in the error: %v", name, err)
		}
		var ue *url.Error
		if !errors.As(err, &ue) {
			t.Errorf("%s: no *url.Error in %v", name, err)
		} else if leaks(ue.URL) {
			t.Errorf("%s: the signature is in the wrapped *url.Error: %s", name, ue.URL)
		}
	}
	if len(events) == 0 {
		t.Fatal("no retries were made")
	}
	for _, ev := range events {
		if leaks(ev.Err.Error()) {
			t.Fatalf("retry event carries the signature: %v", ev.Err)
		}
	}
}
