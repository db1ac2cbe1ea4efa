package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
)

// Employee is the guide's running example.
type Employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Age        int32
	Email      string `table:",omitempty"`
}

var employees = []Employee{
	{Department: "Sales", ID: keys.Pad(123, 6), FirstName: "Ana", LastName: "Jones", Age: 34, Email: "jonesa@contoso.com"},
	{Department: "Sales", ID: keys.Pad(155, 6), FirstName: "Ben", LastName: "Smith", Age: 41, Email: "smithb@contoso.com"},
	{Department: "Sales", ID: keys.Pad(223, 6), FirstName: "Jo", LastName: "Jones", Age: 29, Email: "jonesj@contoso.com"},
	{Department: "Marketing", ID: keys.Pad(108, 6), FirstName: "Cy", LastName: "Brown", Age: 52, Email: "brownc@contoso.com"},
}

func (t *tour) storeEmployees(ctx context.Context) error {
	for _, e := range employees {
		res, err := t.employees.Insert(ctx, e)
		if err != nil {
			return err
		}
		t.say("inserted %s/%s %s %s (ETag %s)", e.Department, e.ID, e.FirstName, e.LastName, res.ETag)
	}
	return nil
}

func (t *tour) pointQuery(ctx context.Context) error {
	e, err := t.employees.Get(ctx, "Sales", keys.Pad(223, 6), nil)
	if err != nil {
		return err
	}
	t.say("PartitionKey eq 'Sales' and RowKey eq '000223' -> %s %s, %s (the cheapest query: one entity, one round trip; ETag %s)", e.Value.FirstName, e.Value.LastName, e.Value.Email, e.ETag)
	if _, err := t.employees.Get(ctx, "Sales", keys.Pad(999, 6), nil); !errors.Is(err, table.ErrNotFound) {
		return fmt.Errorf("missing employee: %v, want ErrNotFound", err)
	}
	t.say("a missing employee answers table.ErrNotFound")
	return nil
}

func (t *tour) rangeQuery(ctx context.Context) error {
	q := &table.Query{
		Filter: table.And(table.PartitionKey("Sales"), table.RowKeyRange(keys.Pad(100, 6), keys.Pad(200, 6))),
		Select: []string{"FirstName", "LastName"},
	}
	t.say("filter: %s; $select=FirstName,LastName", q.Filter)
	found, err := table.Collect(t.employees.Query(ctx, q))
	if err != nil {
		return err
	}
	for _, e := range found {
		t.say("-> %s %s (Age not transferred: %d)", e.FirstName, e.LastName, e.Age)
	}
	if len(found) != 2 {
		return fmt.Errorf("range query found %d employees, want 2", len(found))
	}
	t.say("%d employees, in RowKey order, from one range query", len(found))
	return nil
}

func (t *tour) continuation(ctx context.Context) error {
	q := &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 2}
	page, err := t.employees.QueryPage(ctx, q)
	if err != nil {
		return err
	}
	t.say("page 1: %d employees; cursor to save: %q", len(page.Items), page.Next)
	// A later process resumes from the saved cursor with a new Table.
	later, err := table.New[Employee](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	q.Cursor = page.Next
	rest, err := table.Collect(later.Query(ctx, q))
	if err != nil {
		return err
	}
	t.say("resumed from the cursor: %d more employees (%s)", len(rest), rest[0].FirstName)

	// A cursor that reaches end users (a web API's next-page token) is
	// sealed under the application's key: it shows nothing, and any
	// altered byte is refused before the network.
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	key, err := table.NewCursorKey(secret)
	if err != nil {
		return err
	}
	sealed, err := table.New(t.employees.Client(), &table.Options[Employee]{CursorKey: key})
	if err != nil {
		return err
	}
	q = &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 2}
	if page, err = sealed.QueryPage(ctx, q); err != nil {
		return err
	}
	t.say("the same page with a sealed cursor: %.40s... (%d bytes; no key readable in it)", page.Next, len(page.Next))
	tampered := []byte(page.Next)
	tampered[len(tampered)/2] ^= 1
	q.Cursor = table.Cursor(tampered)
	_, err = sealed.QueryPage(ctx, q)
	t.say("one altered byte: %v", err)
	if !errors.Is(err, table.ErrInvalid) {
		return fmt.Errorf("an altered sealed cursor: %v, want ErrInvalid", err)
	}
	return nil
}

func (t *tour) mergeOrReplace(ctx context.Context) error {
	patch := Employee{Department: "Sales", ID: keys.Pad(155, 6), FirstName: "Benjamin", LastName: "Smith", Age: 42}
	if _, err := t.employees.Update(ctx, patch, azcore.ETagAny, table.Merge); err != nil {
		return err
	}
	e, _ := t.employees.Get(ctx, "Sales", keys.Pad(155, 6), nil)
	t.say("Merge without Email: name %s, Email kept: %q", e.Value.FirstName, e.Value.Email)
	if _, err := t.employees.Update(ctx, patch, e.ETag, table.Replace); err != nil {
		return err
	}
	e, _ = t.employees.Get(ctx, "Sales", keys.Pad(155, 6), nil)
	t.say("Replace without Email: Email removed: %q", e.Value.Email)
	return nil
}

func (t *tour) partialUpdates(ctx context.Context) error {
	// A merge of a whole struct sends every field: zero values overwrite.
	rename := Employee{Department: "Sales", ID: keys.Pad(123, 6), FirstName: "Anna"}
	if _, err := t.employees.Update(ctx, rename, azcore.ETagAny, table.Fields("FirstName")); err != nil {
		return err
	}
	e, err := t.employees.Get(ctx, "Sales", keys.Pad(123, 6), nil)
	if err != nil {
		return err
	}
	t.say("Fields(\"FirstName\") merges one property: %s %s, Age %d kept (a plain Merge of this struct would have set Age to 0)", e.Value.FirstName, e.Value.LastName, e.Value.Age)
	e, err = t.employees.Modify(ctx, "Sales", keys.Pad(123, 6), func(e *Employee) error {
		e.Age++
		return nil
	}, nil)
	if err != nil {
		return err
	}
	t.say("Modify reads, changes and writes back with the ETag it read (retrying on a conflict): Age now %d", e.Value.Age)
	return nil
}

func (t *tour) typedFilters(ctx context.Context) error {
	q := &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.Gt("Age", 30))}
	found, err := table.Collect(t.employees.Query(ctx, q))
	if err != nil {
		return err
	}
	t.say("Gt(\"Age\", 30) is sent as Age gt 30 because Age is an Int32 field (30L, an Int64, would match nothing): %d employees", len(found))
	_, err = t.employees.QueryPage(ctx, &table.Query{Filter: table.Eq("Agee", 30)})
	if !errors.Is(err, table.ErrInvalidFilter) {
		return fmt.Errorf("misspelled property: %v, want ErrInvalidFilter", err)
	}
	t.say("a misspelled property fails before the network: %v", err)
	return nil
}

func (t *tour) lostResponse(ctx context.Context) error {
	// A client whose transport loses the next write's response after the
	// service applied it: the retry policy resends, the resend answers 409.
	ft := &faults.Transport{}
	ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method != http.MethodGet }, LoseResponse: true})
	opts := table.ClientOptions()
	opts.Transport = ft
	svc, err := table.NewServiceClientFromConnectionString(t.connStr, opts)
	if err != nil {
		return err
	}
	flaky, err := table.New[Employee](table.NewClient(svc, t.name), nil)
	if err != nil {
		return err
	}
	res, err := flaky.Insert(ctx, Employee{Department: "HR", ID: keys.Pad(456, 6), FirstName: "Lou", LastName: "Lost"})
	if err != nil || !res.Verified {
		return fmt.Errorf("insert with a lost response: %+v, %v", res, err)
	}
	t.say("the insert's response was lost; the resend answered 409 EntityAlreadyExists")
	t.say("one read of the entity's write history (%s) proved the insert applied: reported as success, Verified", reserved.WriteProperty)
	t.say("(%d requests: the lost one, the resend, the read). A delete has nothing left to read: it reports table.ErrOutcomeUnknown", ft.Count())
	return nil
}

func (t *tour) logTail(ctx context.Context) error {
	type Login struct{ IP string }
	logins, err := table.New[Login](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	tail, err := logtail.New(logins, nil)
	if err != nil {
		return err
	}
	base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	for i := range 5 {
		if _, err := tail.AppendAt(ctx, "logins-000223", base.Add(time.Duration(i)*time.Hour), Login{IP: fmt.Sprint("10.0.0.", i+1)}); err != nil {
			return err
		}
	}
	latest, err := tail.Latest(ctx, "logins-000223", 2)
	if err != nil {
		return err
	}
	t.say("5 logins of employee 000223 appended under inverted-ticks RowKeys (e.g. %s...)", latest[0].RowKey[:19])
	for _, e := range latest {
		t.say("Latest(2): %s from %s", e.Time.Format(time.DateTime), e.Value.IP)
	}
	t.say("newest first from one range query of $top=2, however long the log")
	return nil
}

func (t *tour) dataSeries(ctx context.Context) error {
	tbl, err := table.New[table.Dynamic](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	counts, err := dataseries.New[int64](tbl, dataseries.Hours(), nil)
	if err != nil {
		return err
	}
	for _, h := range []string{"H09", "H09", "H14", "H18", "H18", "H18"} {
		if _, err := counts.Add(ctx, "msgcount-000223", "2024-07-31", h, 1); err != nil {
			return err
		}
	}
	day, err := counts.Get(ctx, "msgcount-000223", "2024-07-31")
	if err != nil {
		return err
	}
	t.say("messages of employee 000223 on 2024-07-31, one property per hour of one entity:")
	t.say("09:00 %d, 14:00 %d, 18:00 %d (the whole day is one point query; each Add a read and a conditional merge)", day.Value["H09"], day.Value["H14"], day.Value["H18"])
	return nil
}

func (t *tour) wideEntity(ctx context.Context) error {
	tbl, err := table.New[table.Dynamic](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	counts, err := wideentity.New(tbl, &wideentity.Options[table.Dynamic]{Parts: 2})
	if err != nil {
		return err
	}
	year := table.Dynamic{PartitionKey: "msgdays-000223", RowKey: "2023", Properties: map[string]any{}}
	for day := 1; day <= 365; day++ {
		year.Properties[fmt.Sprintf("D%03d", day)] = int64(day%5 + 1)
	}
	res, err := counts.Insert(ctx, year)
	if err != nil {
		return err
	}
	t.say("messages of employee 000223 per day of 2023: 365 properties, more than the 252 one entity holds")
	t.say("stored as a header and 2 part rows of one partition (RowKeys %s, %s, ...), written in one transaction",
		keys.Join("2023", "h"), keys.Join("2023", "p", "02", "00"))
	feb1 := table.Dynamic{PartitionKey: "msgdays-000223", RowKey: "2023", Properties: map[string]any{"D032": int64(40)}}
	if _, err := counts.Update(ctx, feb1, azcore.ETagAny, table.Fields("D032")); err != nil {
		return err
	}
	t.say("February 1 set to 40 with one merge into the row that holds it (and the header's, in the same transaction), no read")
	got, err := counts.Get(ctx, "msgdays-000223", "2023")
	if err != nil {
		return err
	}
	t.say("Get: one range query returns all %d days from %d part rows; Feb 1 = %d, Dec 31 = %d",
		len(got.Value.Properties), got.Parts, got.Value.Properties["D032"], got.Value.Properties["D365"])
	_, err = counts.Update(ctx, year, res.ETag, table.Replace)
	if !errors.Is(err, table.ErrPreconditionFailed) {
		return fmt.Errorf("a rewrite with the ETag from before the merge: %v, want ErrPreconditionFailed", err)
	}
	t.say("a whole-year rewrite with the ETag read before that merge is refused (412): the header's ETag versions the whole entity")
	return nil
}

func (t *tour) concurrency(ctx context.Context) error {
	a, err := t.employees.Get(ctx, "Sales", keys.Pad(223, 6), nil)
	if err != nil {
		return err
	}
	b := a // a second writer read the same version
	a.Value.Age++
	if _, err := t.employees.Update(ctx, a.Value, a.ETag, table.Replace); err != nil {
		return err
	}
	t.say("writer A read ETag %s and updated Age to %d", a.ETag, a.Value.Age)
	b.Value.LastName = "Jones-Smith"
	_, err = t.employees.Update(ctx, b.Value, b.ETag, table.Replace)
	if !errors.Is(err, table.ErrPreconditionFailed) {
		return fmt.Errorf("writer B: %v, want ErrPreconditionFailed", err)
	}
	t.say("writer B, with the same old ETag, is refused: %v", err)
	t.say("(B re-reads and retries; retry.Policy.Do with retry.RetryOn412 does that loop)")
	return nil
}

func (t *tour) bulkLoad(ctx context.Context) error {
	var ops []table.Op
	for i := 0; i < 1000; i++ {
		dept := []string{"Sales", "Marketing", "HR"}[i%3]
		ops = append(ops, t.employees.InsertOp(Employee{Department: dept, ID: keys.Pad(uint64(1000+i), 6), FirstName: "E", LastName: fmt.Sprint(i)}))
	}
	start := time.Now()
	res, err := t.employees.Submit(ctx, ops, nil)
	if err != nil {
		return err
	}
	t.say("1,000 inserts over 3 partitions in %d transactions (at most 100 operations and 4 MiB each) in %v",
		res.Transactions, time.Since(start).Round(time.Millisecond))
	return nil
}

func (t *tour) sas(ctx context.Context) error {
	endpoint, cred, err := table.ParseConnectionString(t.connStr)
	if err != nil {
		t.say("skipped: the connection string has no account key to sign with (%v)", err)
		return nil
	}
	sasURL, err := table.SASURL(endpoint, cred, t.name, table.SASOptions{
		Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour),
		StartPartitionKey: "Marketing", EndPartitionKey: "Marketing", AllowHTTP: strings.HasPrefix(endpoint, "http:"),
	})
	if err != nil {
		return err
	}
	u, _ := url.Parse(sasURL)
	t.say("SAS for PartitionKey Marketing, read-only: sp=%s spk=%s epk=%s", u.Query().Get("sp"), u.Query().Get("spk"), u.Query().Get("epk"))
	c, err := table.NewClientFromSASURL(sasURL, nil)
	if err != nil {
		return err
	}
	ro, _ := table.New[Employee](c, nil)
	mk, err := table.Collect(ro.Query(ctx, &table.Query{Filter: table.PartitionKey("Marketing"), Limit: 3}))
	if err != nil {
		return err
	}
	t.say("the SAS client reads Marketing (%d employees shown)", len(mk))
	if _, err := ro.Insert(ctx, Employee{Department: "Marketing", ID: "x"}); err == nil {
		return errors.New("a read-only SAS wrote an entity")
	}
	t.say("and cannot write (403). The emulator does not enforce key ranges; Azure does.")
	return nil
}

func (t *tour) validation(ctx context.Context) error {
	_, err := t.employees.Insert(ctx, Employee{Department: "R&D/Europe", ID: "1"})
	t.say("PartitionKey \"R&D/Europe\": %v", err)
	t.say("escaped with keys.Escape it is valid and sorts the same: %q", keys.Escape("R&D/Europe"))
	if !errors.Is(err, table.ErrInvalidKey) {
		return fmt.Errorf("want ErrInvalidKey, got %v", err)
	}
	return nil
}
