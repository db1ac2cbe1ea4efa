package tabletest_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

func TestTableRoundTrip(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	c := env.Table(nil)
	ctx := context.Background()
	in := map[string]any{"PartitionKey": "Sales", "RowKey": "000223", "FirstName": "Jo", "Age": 42}
	body, _ := json.Marshal(in)
	if _, err := c.AddEntity(ctx, body, nil); err != nil {
		t.Fatalf("AddEntity: %v", err)
	}
	got, err := c.GetEntity(ctx, "Sales", "000223", nil)
	if err != nil {
		t.Fatalf("GetEntity: %v", err)
	}
	var out aztables.EDMEntity
	if err := json.Unmarshal(got.Value, &out); err != nil {
		t.Fatal(err)
	}
	if out.Properties["FirstName"] != "Jo" || out.Properties["Age"] != int32(42) {
		t.Fatalf("read back %v, want FirstName=Jo Age=42", out.Properties)
	}
}

func TestQueueAndContainer(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ctx := context.Background()
	q := env.Queue(nil)
	if _, err := q.EnqueueMessage(ctx, "hello", nil); err != nil {
		t.Fatalf("EnqueueMessage: %v", err)
	}
	msgs, err := q.DequeueMessage(ctx, nil)
	if err != nil || len(msgs.Messages) != 1 || *msgs.Messages[0].MessageText != "hello" {
		t.Fatalf("DequeueMessage = %+v, %v; want one message 'hello'", msgs, err)
	}
	c := env.Container(nil)
	b := c.NewBlockBlobClient("a/b.txt")
	if _, err := b.UploadBuffer(ctx, []byte("data"), nil); err != nil {
		t.Fatalf("UploadBuffer: %v", err)
	}
	n := 0
	for p := c.NewListBlobsFlatPager(nil); p.More(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Segment.BlobItems)
	}
	if n != 1 {
		t.Fatalf("listed %d blobs, want 1", n)
	}
}

func TestNamesAreValidAndUnique(t *testing.T) {
	env := tabletest.New(t)
	valid := regexp.MustCompile(`^[a-z][a-z0-9]{2,62}$`)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		n := env.Name()
		if !valid.MatchString(n) {
			t.Fatalf("Name() = %q: not a valid table/queue/container name", n)
		}
		if seen[n] {
			t.Fatalf("Name() returned %q twice", n)
		}
		seen[n] = true
	}
}

func TestTableIsDeletedAtCleanup(t *testing.T) {
	env := tabletest.New(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		inner := tabletest.New(t)
		name = inner.Name()
		inner.CreateTable(name, nil)
		if n := countTables(t, inner, name); n != 1 {
			t.Fatalf("listing finds %d tables named %s right after creating it, want 1", n, name)
		}
	})
	if n := countTables(t, env, name); n != 0 {
		t.Fatalf("table %s still exists after its test ended", name)
	}
}

// A Prefix fits rotation, the pattern that creates tables of its own,
// with each of its periods, also for a test name longer than a table name
// may be; every table created under it (rotation's periods) is deleted
// when the test ends, and no other table is.
func TestPrefixTablesAreDeletedAtCleanup(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ctx := context.Background()
	other := env.Name()
	env.CreateTable(other, nil)
	var prefix string
	t.Run("a test whose name is longer than a table name may be, even with its parent's", func(t *testing.T) {
		inner := tabletest.New(t)
		prefix = inner.Prefix()
		if !regexp.MustCompile(`^tk[a-z0-9]*[a-z]$`).MatchString(prefix) || len(prefix) > 32 {
			t.Fatalf("Prefix() = %q: want lower-case letters and digits, ending with a letter, at most 32", prefix)
		}
		if again := inner.Prefix(); again == prefix || strings.HasPrefix(again, prefix) || strings.HasPrefix(prefix, again) {
			t.Fatalf("Prefix() twice: %q and %q, one a prefix of the other", prefix, again)
		}
		type login struct {
			User string `table:",pk"`
			At   string `table:",rk"`
		}
		for _, p := range []rotation.Period{rotation.Month, rotation.Day} {
			if _, err := rotation.New[login](inner.Tables, prefix, &rotation.Options{Period: p}); err != nil {
				t.Fatalf("rotation.New with Prefix() %q: %v", prefix, err)
			}
		}
		start := time.Date(2024, 7, 31, 9, 0, 0, 0, time.UTC)
		now := func() time.Time { return start.Add(2 * time.Hour) }
		r, err := rotation.New[login](inner.Tables, prefix, &rotation.Options{Period: rotation.Hour, Grace: 24 * time.Hour, Now: now})
		if err != nil {
			t.Fatalf("rotation.New with Prefix() %q: %v", prefix, err)
		}
		for h := range 3 {
			at := start.Add(time.Duration(h) * time.Hour)
			if _, err := r.Insert(ctx, at, login{User: "jones", At: at.Format(time.RFC3339)}); err != nil {
				t.Fatal(err)
			}
		}
		if got := tablesUnder(t, inner, prefix); len(got) != 3 {
			t.Fatalf("tables under %s: %v, want rotation's 3 periods", prefix, got)
		}
	})
	if got := tablesUnder(t, env, prefix); len(got) != 0 {
		t.Fatalf("tables under %s after its test ended: %v, want none", prefix, got)
	}
	if n := countTables(t, env, other); n != 1 {
		t.Fatalf("table %s of the parent test is gone after the subtest's cleanup", other)
	}
}

// tablesUnder lists the tables whose names start with prefix.
func tablesUnder(t *testing.T, env *tabletest.Env, prefix string) []string {
	t.Helper()
	var names []string
	for name, err := range table.ListTables(context.Background(), env.Tables, prefix) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

func countTables(t *testing.T, env *tabletest.Env, name string) int {
	t.Helper()
	pager := env.Tables.NewListTablesPager(&aztables.ListTablesOptions{Filter: ptr("TableName eq '" + name + "'")})
	page, err := pager.NextPage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Tables)
}

func ptr[T any](v T) *T { return &v }

// Two emulators started side by side (as two test binaries would) get
// different ports, both work, and Stop ends the process.
func TestParallelEmulatorsAndStop(t *testing.T) {
	if os.Getenv(emulator.ConnectionStringEnv) != "" {
		t.Skip("uses the emulator directly; not meaningful against a real account")
	}
	skipWithoutEmulator(t)
	t.Parallel()
	ctx := context.Background()
	a, err := emulator.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := emulator.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.TableURL == b.TableURL || a.BlobURL == b.BlobURL || a.QueueURL == b.QueueURL {
		t.Fatalf("two emulators share an endpoint: %+v %+v", a, b)
	}
	for _, e := range []*emulator.Emulator{a, b} {
		svc, err := aztables.NewServiceClientFromConnectionString(e.ConnectionString(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateTable(ctx, "parallel", nil); err != nil {
			t.Fatalf("CreateTable on %s: %v", e.TableURL, err) // would 409 if both were one emulator
		}
	}
	for _, e := range []*emulator.Emulator{a, b} {
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-e.Exited(): // closed once the process has been waited for
		default:
			t.Fatalf("process %d has not exited after Stop returned", e.PID())
		}
		svc, _ := aztables.NewServiceClientFromConnectionString(e.ConnectionString(), &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
		if _, err := svc.CreateTable(ctx, "after", nil); err == nil {
			t.Fatalf("the emulator at %s still answers after Stop", e.TableURL)
		}
	}
}

func TestServiceClients(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ctx := context.Background()
	if _, err := env.QueueService(nil).GetServiceProperties(ctx, nil); err != nil {
		t.Fatalf("queue service: %v", err)
	}
	if _, err := env.BlobService(nil).ServiceClient().GetProperties(ctx, nil); err != nil {
		t.Fatalf("blob service: %v", err)
	}
}
