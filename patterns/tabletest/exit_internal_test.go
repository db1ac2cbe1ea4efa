package tabletest

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/retry"
)

// countAttempts is a per-retry policy that counts the attempts it sees.
type countAttempts struct{ n atomic.Int32 }

func (c *countAttempts) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	return req.Next()
}

// When the emulator dies mid-run, the shared emulator's users fail at once
// with emulator.ErrExited and its last output: ConnectionString, New, and
// every request of an Env's clients (no retries, whatever the retry policy).
// A private sharedEmulator stands in for the process-wide one, so the
// other tests keep theirs.
func TestExitedEmulatorFailsFast(t *testing.T) {
	if os.Getenv(emulator.ConnectionStringEnv) != "" || optedOut() {
		t.Skip("needs an emulator of its own")
	}
	t.Parallel()
	ctx := context.Background()
	var s sharedEmulator
	t.Cleanup(func() { _ = s.stop() })
	env, err := s.env(t)
	if err != nil {
		t.Fatal(err)
	}
	name := env.Name()
	if _, err := env.Tables.CreateTable(ctx, name, nil); err != nil {
		t.Fatalf("CreateTable while the emulator runs: %v", err)
	}
	if env.emu.Err() != nil {
		t.Fatalf("Err() = %v while the emulator runs", env.emu.Err())
	}

	// The emulator dies, not through Stop.
	p, err := os.FindProcess(env.emu.PID())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	<-env.emu.Exited()

	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, emulator.ErrExited) {
			t.Errorf("%s: err = %v, want emulator.ErrExited", what, err)
		}
	}
	_, err = s.connectionString()
	check("ConnectionString", err)
	if err != nil && !strings.Contains(err.Error(), "Azurite Table service is successfully listening") {
		t.Errorf("error does not end with the emulator's output: %v", err)
	}
	_, err = s.env(t)
	check("New", err)

	_, err = env.Tables.CreateTable(ctx, env.Name(), nil)
	check("Env.Tables", err)

	// A client with its own options, retry.Default and a hook that counts
	// retries: there are none.
	var retries atomic.Int32
	pol := retry.Default
	pol.OnRetry = func(retry.Event) { retries.Add(1) }
	o := &aztables.ClientOptions{}
	pol.ApplyTo(&o.ClientOptions)
	_, err = env.TableClient(name, o).AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)
	check("TableClient with retry.Default", err)
	if n := retries.Load(); n != 0 {
		t.Errorf("retry.Default retried %d times", n)
	}

	// azcore's built-in retry makes one attempt only.
	attempts := &countAttempts{}
	o = &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{attempts}}}
	_, err = env.TableClient(name, o).AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)
	check("TableClient with azcore's retry", err)
	if n := attempts.n.Load(); n != 1 {
		t.Errorf("azcore's retry made %d attempts, want 1", n)
	}

	_, err = env.QueueService(nil).NewQueueClient(env.Name()).Create(ctx, nil)
	check("QueueService", err)
	_, err = env.BlobService(nil).ServiceClient().GetProperties(ctx, nil)
	check("BlobService", err)
}
