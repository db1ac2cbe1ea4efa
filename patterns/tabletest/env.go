package tabletest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// shared is the emulator ConnectionString and New start on first use.
var shared sharedEmulator

// sharedEmulator is an emulator started on first use and shared by its
// users. Its methods are safe for concurrent use.
type sharedEmulator struct {
	mu  sync.Mutex
	emu *emulator.Emulator
	err error
}

// connect returns the connection string of the account to use and, when that
// is the emulator, the emulator. Once the emulator has exited it returns the
// emulator's emulator.ErrExited error at once.
func (s *sharedEmulator) connect() (string, *emulator.Emulator, error) {
	if cs := os.Getenv(emulator.ConnectionStringEnv); cs != "" {
		return cs, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emu == nil && s.err == nil {
		s.emu, s.err = emulator.Start(context.Background(), nil)
	}
	if s.err != nil {
		return "", nil, s.err
	}
	if err := s.emu.Err(); err != nil {
		return "", nil, err
	}
	return s.emu.ConnectionString(), s.emu, nil
}

func (s *sharedEmulator) connectionString() (string, error) {
	cs, _, err := s.connect()
	return cs, err
}

// env returns an Env for t on the shared account.
func (s *sharedEmulator) env(t testing.TB) (*Env, error) {
	cs, emu, err := s.connect()
	if err != nil {
		return nil, err
	}
	e := &Env{ConnectionString: cs, t: t, emu: emu}
	o := clientOptions()
	o.ClientOptions = e.withExitCheck(o.ClientOptions)
	if e.Tables, err = table.NewServiceClientFromConnectionString(cs, o); err != nil {
		return nil, fmt.Errorf("tabletest: table service client: %w", err)
	}
	return e, nil
}

// stop stops the emulator, if one was started, and forgets it.
func (s *sharedEmulator) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.emu == nil {
		return nil
	}
	err := s.emu.Stop()
	s.emu, s.err = nil, nil
	return err
}

// ConnectionString returns the connection string of the account tests and
// examples should use: the value of AZURE_STORAGE_CONNECTION_STRING when set,
// else that of an Azurite emulator shared by the whole process, started on
// first use. Once that emulator has exited, it fails at once with an error
// that wraps emulator.ErrExited and shows the emulator's last output. Safe for
// concurrent use.
func ConnectionString() (string, error) {
	return shared.connectionString()
}

// StopShared stops the emulator started by ConnectionString, if any. Without
// it the emulator still exits when the process does.
func StopShared() error {
	return shared.stop()
}

// Main runs a test binary's tests and stops the shared emulator afterwards.
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { tabletest.Main(m) }
//
// When TABLEKIT_NO_EMULATOR=1 applies (see emulator.NoEmulatorEnv), Main also skips
// the binary's examples, as if -test.skip named them: an example cannot skip
// itself, and one that needs storage would fail. Tests that need storage
// skip themselves in New.
func Main(m *testing.M) {
	if optedOut() {
		skipExamples()
	}
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// skipExamples adds every example to the -test.skip pattern.
func skipExamples() {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.skip")
	if f == nil {
		return
	}
	skip := "^Example"
	if cur := f.Value.String(); cur != "" {
		skip = cur + "|" + skip // a top-level | separates whole patterns
	}
	if err := f.Value.Set(skip); err != nil {
		fmt.Fprintf(os.Stderr, "tabletest: %s=1: cannot skip the examples: %v\n", emulator.NoEmulatorEnv, err)
		return
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "tabletest: %s=1: skipping the examples\n", emulator.NoEmulatorEnv)
	}
}

// optedOut reports whether TABLEKIT_NO_EMULATOR=1 applies: it is set, no
// connection string is given and CI is not set.
func optedOut() bool {
	return os.Getenv(emulator.ConnectionStringEnv) == "" && os.Getenv(emulator.NoEmulatorEnv) == "1" && os.Getenv("CI") == ""
}

// Env is a live storage account for one test: the shared emulator or the
// account named by AZURE_STORAGE_CONNECTION_STRING. Names and resources it
// hands out are unique to the test and deleted when the test ends. When the
// account is the emulator, every client an Env builds fails requests at once
// with emulator.ErrExited once the emulator has exited, instead of retrying.
// An Env is safe for concurrent use by the test's goroutines.
type Env struct {
	// ConnectionString is the account's connection string.
	ConnectionString string
	// Tables is a table service client using retry.Default in place of
	// azcore's built-in retry.
	Tables *aztables.ServiceClient

	t   testing.TB
	emu *emulator.Emulator // nil for a real account
}

// New returns an Env for t, starting the shared emulator on first use. It
// fails t (never skips, unless TABLEKIT_NO_EMULATOR=1 outside CI) when no
// account can be reached, and at once when the shared emulator has exited.
func New(t testing.TB) *Env {
	t.Helper()
	if optedOut() {
		t.Skipf("%s=1: skipping a test that needs a storage emulator", emulator.NoEmulatorEnv)
	}
	env, err := shared.env(t)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// withExitCheck returns o with a per-retry policy that fails every attempt
// at once when the emulator has exited; o's slices are not modified.
func (e *Env) withExitCheck(o azcore.ClientOptions) azcore.ClientOptions {
	if e.emu != nil {
		o.PerRetryPolicies = append(o.PerRetryPolicies[:len(o.PerRetryPolicies):len(o.PerRetryPolicies)], exitCheck{e.emu})
	}
	return o
}

// exitCheck is the policy withExitCheck adds. Its error is final for
// retry.Default (not a transport error) and for azcore's retry policy
// (NonRetriable).
type exitCheck struct{ emu *emulator.Emulator }

func (c exitCheck) Do(req *policy.Request) (*http.Response, error) {
	if err := c.emu.Err(); err != nil {
		return nil, err
	}
	return req.Next()
}

// Name returns a fresh name that is valid for a table, a queue and a blob
// container alike: lower-case letters and digits, starting with a letter,
// at most 52 characters, derived from the test's name. It ends in hex
// digits, so it is no prefix for a pattern's tables: use Prefix.
func (e *Env) Name() string {
	return uniqueName(e.t.Name(), 40)
}

// Prefix returns a fresh prefix for the names of tables that a pattern
// creates itself (rotation.New's prefix: a table per period), derived from
// the test's name: lower-case letters and digits, starting and ending with
// a letter, at most 32 characters, so that 31 more characters still make a
// valid table name (a rotation's period takes 6 to 10). When the test
// ends, every table whose name starts with it is deleted: one listing
// (one round trip per 1,000 tables), then one delete per table. Only
// those: the 12 random hex digits in a prefix keep other tests' names and
// prefixes from starting with it.
func (e *Env) Prefix() string {
	e.t.Helper()
	prefix := uniqueName(e.t.Name(), 19) + "x"
	e.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if err := e.deleteTables(ctx, prefix); err != nil {
			e.t.Errorf("tabletest: deleting the tables of prefix %s: %v", prefix, err)
		}
	})
	return prefix
}

// deleteTables deletes every table whose name starts with prefix.
func (e *Env) deleteTables(ctx context.Context, prefix string) error {
	filter := "TableName ge '" + prefix + "' and TableName lt '" + prefix + "{'" // '{' follows 'z'; prefix needs no quoting
	var names []string
	for pager := e.Tables.NewListTablesPager(&aztables.ListTablesOptions{Filter: &filter}); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing them: %w", err)
		}
		for _, t := range page.Tables {
			if t.Name != nil && strings.HasPrefix(*t.Name, prefix) {
				names = append(names, *t.Name)
			}
		}
	}
	var errs []error
	for _, name := range names {
		if _, err := e.Tables.DeleteTable(ctx, name, nil); err != nil && !isStatus(err, 404) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// uniqueName is "tk", the first letters and digits of hint (lower-cased)
// up to n characters in all, then 12 random hex digits.
func uniqueName(hint string, n int) string {
	var b strings.Builder
	b.WriteString("tk")
	for _, r := range strings.ToLower(hint) {
		if b.Len() >= n {
			break
		}
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	b.WriteString(hex.EncodeToString(rnd[:]))
	return b.String()
}

func clientOptions() *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	return o
}

func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// Table creates a table with a fresh name and returns a client for it, built
// with opts (nil means the Tables client's options, with retry.Default).
// The table is deleted when the test ends.
func (e *Env) Table(opts *aztables.ClientOptions) *aztables.Client {
	e.t.Helper()
	return e.CreateTable(e.Name(), opts)
}

// CreateTable creates the table called name and returns a client for it,
// built with opts. The table is deleted when the test ends. Creation and
// deletion use a client with default options, so a test may hand opts a
// fault-injecting transport.
func (e *Env) CreateTable(name string, opts *aztables.ClientOptions) *aztables.Client {
	e.t.Helper()
	ctx, cancel := cleanupContext()
	defer cancel()
	if _, err := e.Tables.CreateTable(ctx, name, nil); err != nil {
		e.t.Fatalf("tabletest: creating table %s: %v", name, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if _, err := e.Tables.DeleteTable(ctx, name, nil); err != nil && !isStatus(err, 404) {
			e.t.Errorf("tabletest: deleting table %s: %v", name, err)
		}
	})
	return e.TableClient(name, opts)
}

// TableClient returns a client for the table called name, built with opts,
// without creating the table.
func (e *Env) TableClient(name string, opts *aztables.ClientOptions) *aztables.Client {
	e.t.Helper()
	svc := e.Tables
	if opts != nil {
		o := *opts
		o.ClientOptions = e.withExitCheck(o.ClientOptions)
		var err error
		if svc, err = table.NewServiceClientFromConnectionString(e.ConnectionString, &o); err != nil {
			e.t.Fatalf("tabletest: table service client: %v", err)
		}
	}
	return table.NewClient(svc, name)
}

// storage returns the connection string of the account whose queues and
// blobs e's tests use: e's own, or for a Cosmos DB Table API account the
// value of emulator.StorageConnectionStringEnv; it skips the test when there is
// none.
func (e *Env) storage(what string) string {
	e.t.Helper()
	if !cosmosTables(e.ConnectionString) {
		return e.ConnectionString
	}
	cs := os.Getenv(emulator.StorageConnectionStringEnv)
	if cs == "" {
		e.t.Skipf("tabletest: %s names a Cosmos DB Table API account, which has no %s: set %s to a Storage account's connection string to run this test", emulator.ConnectionStringEnv, what, emulator.StorageConnectionStringEnv)
	}
	return cs
}

// cosmosTables reports whether a connection string's table endpoint is a
// Cosmos DB Table API account's (<account>.table.cosmos.azure.com, or the
// older .table.cosmosdb.azure.com).
func cosmosTables(cs string) bool {
	for _, kv := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(strings.TrimSpace(k), "TableEndpoint") {
			v = strings.ToLower(v)
			return strings.Contains(v, ".table.cosmos.") || strings.Contains(v, ".table.cosmosdb.")
		}
	}
	return false
}

// QueueService returns a queue service client for the account, built with
// opts (nil means defaults): for a Cosmos DB Table API account, which has
// no queues, the account of emulator.StorageConnectionStringEnv (the test is
// skipped without one). It fails the test when the account has no queue
// endpoint.
func (e *Env) QueueService(opts *azqueue.ClientOptions) *azqueue.ServiceClient {
	e.t.Helper()
	cs := e.storage("queues")
	var o azqueue.ClientOptions
	if opts != nil {
		o = *opts
	}
	o.ClientOptions = e.withExitCheck(o.ClientOptions)
	svc, err := azqueue.NewServiceClientFromConnectionString(cs, &o)
	if err != nil {
		e.t.Fatalf("tabletest: queue service client (does the account have a queue endpoint?): %v", err)
	}
	return svc
}

// BlobService returns a blob service client for the account, built with
// opts (nil means defaults): for a Cosmos DB Table API account, which has
// no blobs, the account of emulator.StorageConnectionStringEnv (the test is skipped
// without one). It fails the test when the account has no blob endpoint.
func (e *Env) BlobService(opts *azblob.ClientOptions) *azblob.Client {
	e.t.Helper()
	cs := e.storage("blobs")
	var o azblob.ClientOptions
	if opts != nil {
		o = *opts
	}
	o.ClientOptions = e.withExitCheck(o.ClientOptions)
	svc, err := azblob.NewClientFromConnectionString(cs, &o)
	if err != nil {
		e.t.Fatalf("tabletest: blob service client (does the account have a blob endpoint?): %v", err)
	}
	return svc
}

// Queue creates a queue with a fresh name and returns a client for it, built
// with opts (nil means defaults). The queue is deleted when the test ends.
// Creation and deletion use default options.
func (e *Env) Queue(opts *azqueue.ClientOptions) *azqueue.QueueClient {
	e.t.Helper()
	admin, svc := e.QueueService(nil), e.QueueService(opts)
	name := e.Name()
	q := admin.NewQueueClient(name)
	ctx, cancel := cleanupContext()
	defer cancel()
	if _, err := q.Create(ctx, nil); err != nil {
		e.t.Fatalf("tabletest: creating queue %s: %v", name, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if _, err := q.Delete(ctx, nil); err != nil && !isStatus(err, 404) {
			e.t.Errorf("tabletest: deleting queue %s: %v", name, err)
		}
	})
	return svc.NewQueueClient(name)
}

// Container creates a blob container with a fresh name and returns a client
// for it, built with opts (nil means defaults). The container is deleted when
// the test ends. Creation and deletion use default options.
func (e *Env) Container(opts *azblob.ClientOptions) *container.Client {
	e.t.Helper()
	admin, svc := e.BlobService(nil), e.BlobService(opts)
	name := e.Name()
	c := admin.ServiceClient().NewContainerClient(name)
	ctx, cancel := cleanupContext()
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		e.t.Fatalf("tabletest: creating container %s: %v", name, err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		if _, err := c.Delete(ctx, nil); err != nil && !isStatus(err, 404) {
			e.t.Errorf("tabletest: deleting container %s: %v", name, err)
		}
	})
	return svc.ServiceClient().NewContainerClient(name)
}

func isStatus(err error, code int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == code
}
