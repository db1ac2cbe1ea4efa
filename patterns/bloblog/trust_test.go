package bloblog_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/bloblog"
)

// lines returns n bytes of log lines at t (whole lines, each of width w).
func lines(t time.Time, n, w int) []byte {
	var b []byte
	for len(b)+w <= n {
		b = append(b, t.Format("2006-01-02T15:04:05.000000000Z")+" "...)
		b = append(b, strings.Repeat("x", w-len("2006-01-02T15:04:05.000000000Z")-2)+"\n"...)
	}
	return b
}

// beforeRead runs fn once, before the first blob download it forwards.
type beforeRead struct {
	next policy.Transporter
	once sync.Once
	fn   func()
}

func (b *beforeRead) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && !strings.Contains(r.URL.RawQuery, "comp=list") {
		b.once.Do(b.fn)
	}
	return b.next.Do(r)
}

// TestOversize: Range never holds more than Options.MaxBlobSize of a
// blob: a blob listed larger is refused (ErrTooLarge) without being
// downloaded, one that grew past it after the listing is refused from its
// Content-Length, and a line longer than one append is ErrTooLarge.
func TestOversize(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	l, err := bloblog.New[[]byte](f.c, &bloblog.Options{Prefix: "logs/web", MaxBlobSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	from, to := at1805.Add(-time.Hour), at1805.Add(time.Hour)
	name := "logs/web/2014/07/31/1800/big-000001.log"
	if _, err := f.clean.NewBlockBlobClient(name).UploadBuffer(ctx, lines(at1805, 2<<10, 64), nil); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	var last error
	for _, err := range l.Range(ctx, from, to) {
		last = err
	}
	if !errors.Is(last, bloblog.ErrTooLarge) {
		t.Fatalf("Range over a 2 KiB blob, MaxBlobSize 1 KiB = %v", last)
	}
	for _, r := range f.ft.Requests() {
		if !strings.Contains(r.URL, "comp=list") {
			t.Fatalf("the oversize blob was requested: %s %s", r.Method, r.URL)
		}
	}

	// A blob within the limit when listed, grown past it before it is read.
	if _, err := f.clean.NewBlobClient(name).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.clean.NewBlockBlobClient(name).UploadBuffer(ctx, lines(at1805, 512, 64), nil); err != nil {
		t.Fatal(err)
	}
	grow := &beforeRead{next: f.ft, fn: func() {
		if _, err := f.clean.NewBlockBlobClient(name).UploadBuffer(ctx, lines(at1805, 64<<10, 64), nil); err != nil {
			t.Error(err)
		}
	}}
	gc, err := container.NewClientFromConnectionString(f.r.ConnectionString, containerName(f.c), &container.ClientOptions{ClientOptions: policy.ClientOptions{Transport: grow}})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := bloblog.New[[]byte](gc, &bloblog.Options{Prefix: "logs/web", MaxBlobSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	last = nil
	for _, err := range gl.Range(ctx, from, to) {
		last = err
	}
	if !errors.Is(last, bloblog.ErrTooLarge) {
		t.Fatalf("Range over a blob grown past MaxBlobSize after its listing = %v", last)
	}

	// A line longer than one append (4 MiB), in a blob within the limit.
	ld := newLog[[]byte](t, f)
	long := lines(at1805, bloblog.MaxBlockSize+64, bloblog.MaxBlockSize+64)
	if _, err := f.clean.NewBlockBlobClient(name).UploadBuffer(ctx, long, nil); err != nil {
		t.Fatal(err)
	}
	last = nil
	for _, err := range ld.Range(ctx, from, to) {
		last = err
	}
	if !errors.Is(last, bloblog.ErrTooLarge) {
		t.Fatalf("Range over a line longer than one append = %v", last)
	}

	// The limits refused before the network.
	if _, err := bloblog.New[[]byte](f.c, &bloblog.Options{Prefix: "p", MaxBlobSize: 1000}); !errors.Is(err, bloblog.ErrInvalid) {
		t.Errorf("Options.MaxBlobSize 1000: %v", err)
	}
	if _, err := bloblog.New[[]byte](f.c, &bloblog.Options{Prefix: "p", MaxBlobSize: bloblog.MaxBlobSize + 1}); !errors.Is(err, bloblog.ErrInvalid) {
		t.Errorf("Options.MaxBlobSize over MaxBlobSize: %v", err)
	}
	if _, err := l.NewWriter(&bloblog.WriterOptions{MaxBlobSize: 2 << 10}); !errors.Is(err, bloblog.ErrInvalid) {
		t.Errorf("WriterOptions.MaxBlobSize over the Log's: %v", err)
	}
}

func containerName(c *container.Client) string {
	u := strings.TrimSuffix(c.URL(), "/")
	return u[strings.LastIndex(u, "/")+1:]
}

// sasContainer returns a plain SDK client (its own retry policy, without
// retries) of container name at serviceURL, authorised by a container SAS,
// with the SAS's signature and the transport the client sends through.
func sasContainer(t *testing.T, serviceURL, name string) (*container.Client, string, *faults.Transport) {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), ContainerName: name,
		Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	ft := &faults.Transport{}
	o := &container.ClientOptions{}
	o.Transport = ft
	o.Retry.MaxRetries = -1
	c, err := container.NewClientWithNoCredential(strings.TrimSuffix(serviceURL, "/")+"/"+name+"?"+qp.Encode(), o)
	if err != nil {
		t.Fatal(err)
	}
	return c, qp.Signature(), ft
}

// TestSASSignatureNeverInErrors: through a plain SDK container client
// authorised by a SAS, Range, Flush and Close fail (a refused connection,
// whose *url.Error quotes the request URL; an error status; transport
// errors quoting the URL on appends, the reads that settle them, and blob
// reads) without the signature, raw or URL-encoded, in their errors.
func TestSASSignatureNeverInErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := newWriter(t, newLog[Request](t, f), &bloblog.WriterOptions{FlushInterval: -1})
	if err := w.Append(ctx, Request{Path: "/"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	name := containerName(f.c)
	now := time.Now()
	for _, mode := range []string{"refused connection", "error status", "transport errors after a create"} {
		serviceURL := strings.TrimSuffix(f.c.URL(), "/"+name)
		if mode == "refused connection" {
			serviceURL = "http://127.0.0.1:1/" + emulator.DevAccount // nothing listens on port 1
		}
		c, sig, ft := sasContainer(t, serviceURL, name)
		leaks := func(s string) bool { return strings.Contains(s, sig) || strings.Contains(s, url.QueryEscape(sig)) }
		if !leaks(c.URL()) {
			t.Fatalf("the client's URL %s has no signature", c.URL())
		}
		urlErr := func() error { return &url.Error{Op: "Get", URL: c.URL(), Err: syscall.ECONNRESET} }
		switch mode {
		case "error status":
			for range 100 {
				ft.Inject(faults.Fault{Status: http.StatusForbidden, ErrorCode: "AuthenticationFailed"})
			}
		case "transport errors after a create":
			notList := func(r *http.Request) bool { return !strings.Contains(r.URL.RawQuery, "comp=list") }
			for range 10 {
				ft.Inject(
					faults.Fault{Match: func(r *http.Request) bool { return strings.Contains(r.URL.RawQuery, "comp=appendblock") }, Err: urlErr()},
					faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodHead }, Err: urlErr()},
					faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodGet && notList(r) }, Err: urlErr()},
				)
			}
		}
		l, err := bloblog.New[Request](c, &bloblog.Options{Prefix: "logs/web"})
		if err != nil {
			t.Fatal(err)
		}
		sw := newWriter(t, l, &bloblog.WriterOptions{FlushInterval: -1})
		ops := map[string]func() error{
			"Range": func() error {
				for _, err := range l.Range(ctx, now.Add(-time.Hour), now.Add(time.Hour)) {
					if err != nil {
						return err
					}
				}
				return nil
			},
			"Flush": func() error {
				if err := sw.Append(ctx, Request{Path: "/a"}); err != nil {
					return err
				}
				return sw.Flush(ctx)
			},
			"Close": func() error { return sw.Close(ctx) },
		}
		for _, op := range []string{"Range", "Flush", "Close"} {
			err := ops[op]()
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
