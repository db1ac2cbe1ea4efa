// Package testrig is the one test rig of tablekit's packages: a live
// storage endpoint (patterns/tabletest), clients of tables, queues and
// containers whose requests all pass through one fault-injecting, counting
// transport (internal/faults) under a fast retry policy, clean clients of
// the same resources that bypass the faults (to read the truth after an
// injected failure), crash points for multi-step operations, and a
// worker's start and drain. Randomized model tests run on
// internal/modelcheck.
//
// It is for tests only; package tests import it instead of keeping a rig of
// their own.
//
// With TABLEKIT_PROFILE=cosmos (ProfileEnv) the rig's table clients talk to
// a Cosmos-looking endpoint through internal/cosmosim, below Faults: the
// emulator then answers with the Cosmos DB Table API's semantics (results
// in no key order, its limits, throttling), and tablekit takes its Cosmos
// profile, as it would against a Cosmos account.
package testrig

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/cosmosim"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// Fast is the retry policy of the rig's clients: the real policy's
// retries and verification, with waits of a few milliseconds.
var Fast = retry.Policy{Default: time.Millisecond, Max: 2 * time.Millisecond, MaxRetries: 5}

// Contention is a retry policy for optimistic-concurrency loops under
// heavy contention in tests (Modify, index entities): many retries, full
// jitter, short waits.
var Contention = retry.Policy{Default: time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 200, FullJitter: true}

// ProfileEnv names the environment variable that selects the service the
// rig's table clients see: "cosmos" for the Cosmos DB Table API's
// semantics (internal/cosmosim), anything else for the emulator as it is.
const ProfileEnv = "TABLEKIT_PROFILE"

// SimSeedEnv fixes the seed of the Cosmos DB simulation (the orders in
// which it returns query results), to replay a failure with the seed its
// log names; default: the clock.
const SimSeedEnv = "TABLEKIT_SIM_SEED"

// Cosmos reports whether the rigs of this process see the Cosmos DB
// Table API: simulated (ProfileEnv), or the account of
// AZURE_STORAGE_CONNECTION_STRING is a Cosmos DB account. Tests whose exact
// round-trip counts differ there (a read of a whole range) branch on it.
func Cosmos() bool { return os.Getenv(ProfileEnv) == "cosmos" || accountIsCosmos() }

// accountIsCosmos reports whether AZURE_STORAGE_CONNECTION_STRING names a
// Cosmos DB Table API account.
func accountIsCosmos() bool {
	cs := os.Getenv(emulator.ConnectionStringEnv)
	if cs == "" {
		return false
	}
	ep, _, err := table.ParseConnectionString(cs)
	return err == nil && table.ProfileFor(ep) == table.Cosmos
}

// Rig is one test's storage: Env's tables, queues and containers, with
// Faults between their clients and the service.
type Rig struct {
	*tabletest.Env
	// Faults sees (and counts) every request of the rig's clients; inject
	// faults into it.
	Faults *faults.Transport
	// sim is the Cosmos DB simulation below Faults, nil without it.
	sim  *cosmosim.Transport
	cred *aztables.SharedKeyCredential
}

// New returns a rig for t, simulating Cosmos DB when ProfileEnv says so.
// Its tables, queues and containers are deleted when t ends.
func New(t testing.TB) *Rig {
	t.Helper()
	return newRig(t, Cosmos())
}

// NewCosmos returns a rig whose table clients always see the simulated
// Cosmos DB Table API (for the tests of Cosmos behaviour itself).
func NewCosmos(t testing.TB) *Rig {
	t.Helper()
	return newRig(t, true)
}

func newRig(t testing.TB, cosmos bool) *Rig {
	t.Helper()
	r := &Rig{Env: tabletest.New(t), Faults: &faults.Transport{}}
	if cosmos && !accountIsCosmos() { // a Cosmos DB account needs no simulation
		target, cred, err := table.ParseConnectionString(r.ConnectionString)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		key, err := base64.StdEncoding.DecodeString(setting(r.ConnectionString, "AccountKey"))
		if err != nil {
			t.Fatal(err)
		}
		seed := uint64(time.Now().UnixNano())
		if s := os.Getenv(SimSeedEnv); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("testrig: %s=%q is not a number", SimSeedEnv, s)
			}
			seed = n
		}
		t.Logf("testrig: Cosmos DB simulation, seed %d (replay with %s=%d)", seed, SimSeedEnv, seed)
		r.sim = &cosmosim.Transport{Target: u, Account: cred.AccountName(), Key: key, Seed: seed}
		r.Faults.Next, r.cred = r.sim, cred
	}
	return r
}

// Sim returns the Cosmos DB simulation below Faults, nil when the rig has
// none: for tests that make it throttle.
func (r *Rig) Sim() *cosmosim.Transport { return r.sim }

// Profile returns the profile tablekit takes for the rig's tables.
func (r *Rig) Profile() *table.Profile {
	if r.sim != nil || accountIsCosmos() {
		return table.Cosmos
	}
	return table.Storage
}

// ServiceName names the table service the rig's tables are on, as the
// capability matrix's columns do: Azurite, "Cosmos DB (simulated)" (the
// simulation over Azurite or a Storage account), "Azure Table Storage" or
// "Cosmos DB" for the account of AZURE_STORAGE_CONNECTION_STRING.
func (r *Rig) ServiceName() string {
	switch {
	case r.sim != nil:
		return ServiceCosmosSim
	case accountIsCosmos():
		return ServiceCosmos
	case strings.EqualFold(setting(r.ConnectionString, "AccountName"), "devstoreaccount1"):
		return ServiceAzurite
	}
	return ServiceStorage
}

// The services ServiceName names.
const (
	ServiceAzurite   = "Azurite"
	ServiceCosmosSim = "Cosmos DB (simulated)"
	ServiceStorage   = "Azure Table Storage"
	ServiceCosmos    = "Cosmos DB"
)

// Services runs fn as a subtest per table service this process can test
// (named storage or cosmos): the emulator or account as it is, and the
// simulated Cosmos DB Table API over it; under ProfileEnv=cosmos the
// simulation only, and for a Cosmos DB account that account only. Tests of
// behaviour that differs between the services (key order, limits) run
// under it, so that one run proves them on each.
func Services(t *testing.T, fn func(t *testing.T, r *Rig)) {
	t.Helper()
	variants := []bool{false, true}
	if Cosmos() {
		variants = []bool{true}
	}
	for _, cosmos := range variants {
		name := "storage"
		if cosmos {
			name = "cosmos"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, newRig(t, cosmos))
		})
	}
}

// CapabilityPrefix starts the lines Claim logs, which the capabilities
// command (internal/cmd/capabilities) reads from go test -json output.
const CapabilityPrefix = "capability: "

// Capability is one cell of the capability matrix: what a pattern's
// operation does on the rig's service.
type Capability struct {
	Service   string `json:"service"`
	Pattern   string `json:"pattern"`
	Operation string `json:"operation"`
	// Refused reports that the operation refuses (table.ErrUnsupported)
	// on the service, as documented, instead of doing it.
	Refused bool `json:"refused,omitempty"`
	// How says how it is done (or why refused) and at what cost.
	How string `json:"how"`
}

// Claim logs that the test proves c on the rig's service (c.Service is
// set to it): the capabilities command counts it as proven only when the
// test passes.
func (r *Rig) Claim(t testing.TB, c Capability) {
	t.Helper()
	c.Service = r.ServiceName()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(CapabilityPrefix + string(b))
}

// setting returns a connection string's setting.
func setting(cs, name string) string {
	for _, kv := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// TableOptions are the rig's table client options: Faults as transport,
// Fast as retry policy.
func (r *Rig) TableOptions() *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	o.Transport = r.Faults
	Fast.ApplyTo(&o.ClientOptions)
	return o
}

// Table creates a fresh table and returns a client of it through Faults.
func (r *Rig) Table() *aztables.Client {
	if r.sim == nil {
		return r.Env.Table(r.TableOptions())
	}
	return r.cosmosClient(tableName(r.Env.Table(nil)), r.TableOptions())
}

// TableClient returns a client of the table called name built with o, as
// Env.TableClient does; on the simulated Cosmos DB endpoint when the rig
// has one, with the simulation as o's transport unless o sets one (which
// should then forward to Sim).
func (r *Rig) TableClient(name string, o *aztables.ClientOptions) *aztables.Client {
	if r.sim == nil {
		return r.Env.TableClient(name, o)
	}
	var oo aztables.ClientOptions
	if o != nil {
		oo = *o
	}
	if oo.Transport == nil {
		oo.Transport = r.sim
	}
	return r.cosmosClient(name, &oo)
}

// cosmosClient is a client of the table name on the simulated Cosmos
// endpoint.
func (r *Rig) cosmosClient(name string, o *aztables.ClientOptions) *aztables.Client {
	svc, err := table.NewServiceClientFromConnectionString(r.cosmosConnectionString(), o)
	if err != nil {
		panic(err) // a well-formed URL and a credential: cannot fail
	}
	return table.NewClient(svc, name)
}

// cosmosConnectionString is the connection string of the simulated Cosmos
// DB endpoint: the rig's account and key.
func (r *Rig) cosmosConnectionString() string {
	return "TableEndpoint=http://" + cosmosim.Host(r.cred.AccountName()) + "/;AccountName=" + r.cred.AccountName() + ";AccountKey=" + setting(r.ConnectionString, "AccountKey")
}

// SDKClient returns a client of the table called name built by aztables
// itself (not by tablekit, which then knows neither its name nor its
// service), through Faults, on the rig's service.
func (r *Rig) SDKClient(name string) *aztables.Client {
	cs := r.ConnectionString
	if r.sim != nil {
		cs = r.cosmosConnectionString()
	}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, r.TableOptions())
	if err != nil {
		panic(err) // the rig's own connection string
	}
	return svc.NewClient(name)
}

// Service returns a table service client through Faults.
func (r *Rig) Service(t testing.TB) *aztables.ServiceClient {
	t.Helper()
	var svc *aztables.ServiceClient
	var err error
	if r.sim == nil {
		svc, err = table.NewServiceClientFromConnectionString(r.ConnectionString, r.TableOptions())
	} else {
		svc, err = table.NewServiceClientFromConnectionString(r.cosmosConnectionString(), r.TableOptions())
	}
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// Clean returns a client of c's table that bypasses Faults (and the fast
// retry policy): for reading what is really stored.
func (r *Rig) Clean(c *aztables.Client) *aztables.Client {
	if r.sim == nil {
		return r.Env.TableClient(tableName(c), nil)
	}
	o := &aztables.ClientOptions{}
	Fast.ApplyTo(&o.ClientOptions)
	return r.TableClient(tableName(c), o)
}

// tableName is the table c addresses.
func tableName(c *aztables.Client) string {
	tb, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		panic(err) // a non-nil client always makes a Table[Dynamic]
	}
	return tb.Name()
}

// Queue creates a fresh queue and returns a client of it through Faults.
func (r *Rig) Queue() *azqueue.QueueClient {
	o := &azqueue.ClientOptions{}
	o.Transport = r.Faults
	Fast.ApplyTo(&o.ClientOptions)
	return r.Env.Queue(o)
}

// CleanQueue creates a fresh queue and returns a client of it that
// bypasses Faults (a poison queue, for instance).
func (r *Rig) CleanQueue() *azqueue.QueueClient { return r.Env.Queue(nil) }

// Container creates a fresh blob container and returns a client of it
// through Faults.
func (r *Rig) Container() *container.Client {
	o := &azblob.ClientOptions{}
	o.Transport = r.Faults
	Fast.ApplyTo(&o.ClientOptions)
	return r.Env.Container(o)
}

// NewTable returns a Table[T] of c, failing t on error.
func NewTable[T any](t testing.TB, c *aztables.Client) *table.Table[T] {
	t.Helper()
	tb, err := table.New[T](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// ErrCrash is what a crash point returns: the process stopped there.
var ErrCrash = errors.New("testrig: crash injected")

// Crashes injects crashes at named step boundaries of multi-step
// operations: a package calls Hook(step) between its steps (its export_test
// sets the package's hook to it), and a hook that returns ErrCrash stops
// the operation there as a dying process would. The zero value injects
// nothing. It is safe for concurrent use.
type Crashes struct {
	mu       sync.Mutex
	at       map[string]int // step -> crash at its n-th pass (1-based)
	seen     map[string]int
	injected map[string]int
	p        float64
	rnd      func() float64
}

// At makes the n-th pass through step from now on crash (n >= 1).
func (c *Crashes) At(step string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.at[step] = c.seen[step] + n
}

// Random makes every pass through any step crash with probability p,
// drawn from rnd (a model test's generator); p 0 stops it.
func (c *Crashes) Random(p float64, rnd func() float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p, c.rnd = p, rnd
}

// Hook is the crash point: ErrCrash when step is to crash now, else nil.
func (c *Crashes) Hook(step string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.seen[step]++
	if c.at[step] == c.seen[step] || c.p > 0 && c.rnd() < c.p {
		c.injected[step]++
		return ErrCrash
	}
	return nil
}

// Passes returns how many times step was passed (crashed or not).
func (c *Crashes) Passes(step string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[step]
}

// Injected returns how many crashes were injected, by step.
func (c *Crashes) Injected() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.injected))
	for k, v := range c.injected {
		out[k] = v
	}
	return out
}

func (c *Crashes) init() {
	if c.at == nil {
		c.at, c.seen, c.injected = map[string]int{}, map[string]int{}, map[string]int{}
	}
}

// Start runs run (a worker's Run) in a goroutine until the returned stop
// is called or t ends; stop waits for run to return and fails t if it
// returned an error.
func Start(t testing.TB, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Drain calls drain (a worker's Drain) with a one-minute deadline and
// fails t if it does not succeed.
func Drain(t testing.TB, drain func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// StorageOnly skips t on a service whose semantics differ from Table
// Storage's (the Cosmos DB simulation or account) because what t asserts
// is Table Storage's own: key order of plain queries, its limits, its
// request shapes. why names the difference and where the Cosmos DB
// behaviour is tested instead.
func StorageOnly(t testing.TB, why string) {
	t.Helper()
	if Cosmos() {
		t.Skipf("Table Storage semantics only (%s)", why)
	}
}

// Which returns sorted on a service whose queries return rows in key order
// (Table Storage) and unsorted on one without (Cosmos DB): a Capability's
// How, as each service does it.
func (r *Rig) Which(sorted, unsorted string) string {
	if r.Profile().Sorted {
		return sorted
	}
	return unsorted
}
