package table_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Employee is the guide's running example: PartitionKey = department,
// RowKey = zero-padded employee id.
type Employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Age        int32
	Email      string
	Hired      time.Time
}

// exampleTable connects to the emulator (or AZURE_STORAGE_CONNECTION_STRING)
// and creates a fresh table; in an application, build the service client from
// your connection string or credential.
func exampleTable() (*aztables.ServiceClient, string, func()) {
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	svc, err := table.NewServiceClientFromConnectionString(cs, nil) // retry.Default built in
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("example%d", time.Now().UnixNano())
	ctx := context.Background()
	if err := table.CreateTable(ctx, svc, name); err != nil {
		log.Fatal(err)
	}
	return svc, name, func() { _ = table.DeleteTable(ctx, svc, name) }
}

func Example() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()

	employees, err := table.New[Employee](table.NewClient(svc, name), nil)
	if err != nil {
		log.Fatal(err)
	}
	jo := Employee{Department: "Sales", ID: keys.Pad(223, 6), FirstName: "Jo", LastName: "Jones", Age: 29,
		Email: "jonesj@contoso.com", Hired: time.Date(2012, 3, 1, 9, 0, 0, 0, time.UTC)}
	if _, err := employees.Insert(ctx, jo); err != nil {
		log.Fatal(err)
	}

	// Read, change, write back if nobody changed it in between.
	e, err := value(employees.Get(ctx, "Sales", "000223", nil))
	if err != nil {
		log.Fatal(err)
	}
	e.Age++
	if _, err := employees.Update(ctx, e, e.ETag, table.Replace); err != nil {
		log.Fatal(err)
	}
	// The ETag read earlier is now stale.
	_, err = employees.Update(ctx, e, e.ETag, table.Replace)
	fmt.Println(errors.Is(err, table.ErrPreconditionFailed))

	got, _ := value(employees.Get(ctx, "Sales", "000223", nil))
	fmt.Println(got.FirstName, got.Age, got.Hired.Format(time.DateOnly))
	// Output:
	// true
	// Jo 30 2012-03-01
}

// Range queries over RowKeys, with server-side projection.
func ExampleTable_Query() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)
	var ops []table.Op
	for _, id := range []uint64{99, 100, 150, 199, 200} {
		ops = append(ops, employees.InsertOp(Employee{Department: "Sales", ID: keys.Pad(id, 6), FirstName: fmt.Sprint("E", id)}))
	}
	if _, err := employees.Submit(ctx, ops, nil); err != nil {
		log.Fatal(err)
	}

	q := &table.Query{
		Filter: table.And(table.PartitionKey("Sales"), table.RowKeyRange(keys.Pad(100, 6), keys.Pad(200, 6))),
		Select: []string{"FirstName"},
	}
	fmt.Println(q.Filter)
	for e, err := range employees.Query(ctx, q) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.FirstName, e.Age) // Age was not transferred
	}
	// Output:
	// (PartitionKey eq 'Sales') and ((RowKey ge '000100') and (RowKey lt '000200'))
	// E100 0
	// E150 0
	// E199 0
}

// Pages and cursors: a cursor is a string a later process can resume from.
func ExampleTable_QueryPage() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)
	var ops []table.Op
	for i := uint64(0); i < 5; i++ {
		ops = append(ops, employees.InsertOp(Employee{Department: "Sales", ID: keys.Pad(i, 6)}))
	}
	if _, err := employees.Submit(ctx, ops, nil); err != nil {
		log.Fatal(err)
	}

	q := &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 2}
	for {
		page, err := employees.QueryPage(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(page.Items), "entities; more:", page.Next != "")
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next // save it anywhere; resume later
	}
	// Output:
	// 2 entities; more: true
	// 2 entities; more: true
	// 1 entities; more: false
}

// Sealed cursors, for cursors that reach end users (a web API's page
// tokens): with the application's CursorKey a cursor shows no key and any
// altered character is refused before the network, while any process
// with the same secret resumes it.
func ExampleNewCursorKey() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()

	// Once per application, from a secret of at least 32 random bytes kept
	// like its storage credentials (here a fixed one; read yours from the
	// application's configuration or key vault).
	secret := []byte("an example secret: use 32 random bytes")
	key, err := table.NewCursorKey(secret)
	if err != nil {
		log.Fatal(err)
	}
	employees, _ := table.New(table.NewClient(svc, name), &table.Options[Employee]{CursorKey: key}) // and so for every table
	var ops []table.Op
	for _, id := range []string{"000001", "000002", "000003"} {
		ops = append(ops, employees.InsertOp(Employee{Department: "Sales", ID: id}))
	}
	if _, err := employees.Submit(ctx, ops, nil); err != nil {
		log.Fatal(err)
	}

	q := &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 2}
	page, err := employees.QueryPage(ctx, q)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Items), "entities; more:", page.Next != "")

	// A cursor sent back altered (here cut short) is refused.
	q.Cursor = page.Next[:len(page.Next)-1]
	_, err = employees.QueryPage(ctx, q)
	fmt.Println("altered:", errors.Is(err, table.ErrInvalid))

	// Another process, with a key made from the same secret, resumes it.
	key2, _ := table.NewCursorKey(secret)
	elsewhere, _ := table.New(table.NewClient(svc, name), &table.Options[Employee]{CursorKey: key2})
	q.Cursor = page.Next
	page, err = elsewhere.QueryPage(ctx, q)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Items), "entities; more:", page.Next != "")
	// Output:
	// 2 entities; more: true
	// altered: true
	// 1 entities; more: false
}

// Bulk writes are planned into entity group transactions; an Atomic group
// is applied all or nothing.
func ExampleTable_Submit() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)

	var ops []table.Op
	for i := uint64(0); i < 250; i++ {
		ops = append(ops, employees.InsertOp(Employee{Department: "Sales", ID: keys.Pad(i, 6)}))
	}
	res, err := employees.Submit(ctx, ops, nil)
	fmt.Println(res.Transactions, "transactions,", err)

	// An atomic group whose second insert collides: neither is applied.
	group := table.Atomic(
		employees.InsertOp(Employee{Department: "Sales", ID: "new"}),
		employees.InsertOp(Employee{Department: "Sales", ID: keys.Pad(7, 6)}),
	)
	res, err = employees.Submit(ctx, group, nil)
	var oe *table.OpError
	errors.As(res.Ops[1].Err, &oe)
	fmt.Println(res.Ops[0].Applied, errors.Is(err, table.ErrAlreadyExists), oe.Index, oe.Err.Code)
	// Output:
	// 3 transactions, <nil>
	// false true 1 EntityAlreadyExists
}

// Compound RowKeys computed from fields: an employee's yearly reviews sit
// together and one range query reads them.
func ExampleTable_WithKeys() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	type Review struct {
		EmployeeID string
		Year       int32
		Rating     int32
	}
	reviews, err := table.New(table.NewClient(svc, name), &table.Options[Review]{Keys: func(r *Review) (string, string) {
		return "Sales", keys.Join(r.EmployeeID, fmt.Sprint(r.Year))
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range []Review{{"000123", 2012, 4}, {"000123", 2013, 5}, {"000124", 2012, 3}} {
		if _, err := reviews.Insert(ctx, r); err != nil {
			log.Fatal(err)
		}
	}
	q := &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.RowKeyPrefix("000123"))}
	all, err := table.Collect(reviews.Query(ctx, q))
	fmt.Println(all, err)
	// Output:
	// [{000123 2012 4} {000123 2013 5}] <nil>
}

// A shared access signature limited to one partition, read-only, for an
// hour. On Azurite, the HTTP endpoint needs AllowHTTP.
func ExampleSASURL() {
	cred, err := aztables.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		log.Fatal(err)
	}
	url, err := table.SASURL("https://devstoreaccount1.table.core.windows.net", cred, "employees", table.SASOptions{
		Permissions:       aztables.SASPermissions{Read: true},
		Expiry:            time.Now().Add(time.Hour),
		StartPartitionKey: "Sales",
		EndPartitionKey:   "Sales",
	})
	// Then, in the client: c, err := table.NewClientFromSASURL(url, nil)
	fmt.Println(err, len(url) > 0)
	// Output:
	// <nil> true
}

// Parallel queries across partitions, merged in key order.
func ExampleTable_FanOut() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)
	for _, e := range []Employee{{Department: "Sales", ID: "2"}, {Department: "HR", ID: "1"}, {Department: "Sales", ID: "1"}} {
		if _, err := employees.Insert(ctx, e); err != nil {
			log.Fatal(err)
		}
	}
	qs := []*table.Query{{Filter: table.PartitionKey("Sales")}, {Filter: table.PartitionKey("HR")}}
	for e, err := range employees.FanOut(ctx, qs, &table.FanOutOptions{Ordered: true}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Department, e.ID)
	}
	// Output:
	// HR 1
	// Sales 1
	// Sales 2
}

// A read-only SAS minted from a connection string, and a client that reads
// through it. Only the code that mints the SAS needs the account key; the
// client gets a URL that expires, and that cannot write.
func ExampleSASURL_fromConnectionString() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)
	if _, err := employees.Insert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Jo"}); err != nil {
		log.Fatal(err)
	}

	// Where the key is kept: the service URL and key from configuration.
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	serviceURL, cred, err := table.ParseConnectionString(cs)
	if err != nil {
		log.Fatal(err)
	}
	sasURL, err := table.SASURL(serviceURL, cred, name, table.SASOptions{
		Permissions: aztables.SASPermissions{Read: true},
		Expiry:      time.Now().Add(time.Hour),
		AllowHTTP:   true, // the emulator listens on http; leave false for Azure
	})
	if err != nil {
		log.Fatal(err)
	}

	// In the client: only the URL.
	c, err := table.NewClientFromSASURL(sasURL, nil)
	if err != nil {
		log.Fatal(err)
	}
	readOnly, _ := table.New[Employee](c, nil)
	e, err := value(readOnly.Get(ctx, "Sales", "000223", nil))
	fmt.Println(e.FirstName, err)
	_, err = readOnly.Insert(ctx, Employee{Department: "Sales", ID: "000224"})
	var te *table.Error
	if errors.As(err, &te) {
		fmt.Println(te.StatusCode, te.Code)
	}
	// Output:
	// Jo <nil>
	// 403 AuthorizationPermissionMismatch
}

// A read-modify-write that loses no concurrent change and, when a response
// is lost, never applies the change twice.
func ExampleTable_Modify() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)
	if _, err := employees.Insert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Jo", Age: 29}); err != nil {
		log.Fatal(err)
	}
	e, err := employees.Modify(ctx, "Sales", "000223", func(e *Employee) error {
		e.Age++ // fn may run again if another writer got there first
		return nil
	}, nil)
	fmt.Println(e.Value.Age, e.ETag != "", err)
	// Output:
	// 30 true <nil>
}

// A partial update: Fields merges only the named properties, so the zero
// values of the other fields do not overwrite what is stored.
func ExampleFields() {
	svc, name, done := exampleTable()
	defer done()
	ctx := context.Background()
	employees, _ := table.New[Employee](table.NewClient(svc, name), nil)
	if _, err := employees.Insert(ctx, Employee{Department: "Sales", ID: "000006", FirstName: "Jo", Email: "jo@contoso.com", Age: 41}); err != nil {
		log.Fatal(err)
	}
	rename := Employee{Department: "Sales", ID: "000006", FirstName: "Joanna"}
	if _, err := employees.Update(ctx, rename, azcore.ETagAny, table.Fields("FirstName")); err != nil {
		log.Fatal(err)
	}
	got, _ := value(employees.Get(ctx, "Sales", "000006", nil))
	fmt.Println(got.FirstName, got.Email, got.Age)

	// A literal is typed by the field it is compared with (Age is Int32),
	// and a misspelled property fails before anything is sent.
	n := 0
	for _, err := range employees.Query(ctx, &table.Query{Filter: table.And(table.PartitionKey("Sales"), table.Gt("Age", 40))}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	_, err := employees.QueryPage(ctx, &table.Query{Filter: table.Eq("Agee", 40)})
	fmt.Println(n, errors.Is(err, table.ErrInvalidFilter))
	// Output:
	// Joanna jo@contoso.com 41
	// 1 true
}
