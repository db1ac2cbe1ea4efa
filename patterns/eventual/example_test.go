package eventual_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// Customer is a primary entity; its email index lives in another
// partition (PartitionKey = email), kept by an intent.
type Customer struct {
	table.Meta
	Region string `table:",pk"`
	ID     string `table:",rk"`
	Email  string
}

// EmailIndex is the index row: find a customer by email.
type EmailIndex struct {
	Email  string `table:",pk"`
	Region string `table:",rk"`
	ID     string
}

// A primary write and its intent, all or nothing: Commit writes the
// customer and a commit record in one transaction, and the worker keeps
// the index in another partition by reconciling from the customer.
func ExampleQueue_Commit() {
	ctx := context.Background()
	customers, index, q, done := exampleSetup(ctx)
	defer done()

	indexEmail := eventual.NewKind[Customer]("index-email")
	handler := indexEmail.Handle(func(ctx context.Context, in eventual.Intent[Customer]) error {
		p := in.Payload
		for range 4 { // a customer written all the time: fail, and be retried later
			c, err := customers.Get(ctx, p.Region, p.ID, nil)
			if err != nil && !errors.Is(err, table.ErrNotFound) {
				return err
			}
			if err != nil { // deleted: no index row (already gone is done)
				if err := index.Delete(ctx, p.Email, p.Region, azcore.ETagAny); err != nil && !errors.Is(err, table.ErrNotFound) {
					return err
				}
			} else if _, err := index.Upsert(ctx, EmailIndex{Email: c.Value.Email, Region: c.Value.Region, ID: c.Value.ID}, table.Replace); err != nil {
				return err
			}
			// Another intent's run for this customer may overlap this
			// one: done only if the customer is still the version read.
			again, err := customers.Get(ctx, p.Region, p.ID, nil)
			if err != nil && !errors.Is(err, table.ErrNotFound) {
				return err
			}
			if again.ETag == c.ETag { // both empty when it is deleted
				return nil
			}
		}
		return fmt.Errorf("customer %s/%s changed at each of 4 rounds", p.Region, p.ID)
	})

	c := Customer{Region: "emea", ID: "c42", Email: "ana@contoso.com"}
	res, err := q.Commit(ctx, customers.Client(), []table.Op{customers.InsertOp(c)}, indexEmail.New(c))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed and released:", res.Released)

	w, err := eventual.NewWorker(q, []eventual.Handler{handler}, &eventual.WorkerOptions{Idle: &retry.Policy{Default: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	finished := make(chan error, 1)
	go func() { finished <- w.Run(runCtx) }()
	if err := w.Drain(ctx); err != nil {
		log.Fatal(err)
	}
	stop()
	if err := <-finished; err != nil {
		log.Fatal(err)
	}
	row, err := index.Get(ctx, "ana@contoso.com", "emea", nil)
	fmt.Println("index:", row.Value.Email, "->", row.Value.Region+"/"+row.Value.ID, err)
	// Output:
	// committed and released: true
	// index: ana@contoso.com -> emea/c42 <nil>
}

// exampleSetup creates two tables and two queues on the emulator (or the
// account in AZURE_STORAGE_CONNECTION_STRING) and returns the typed
// tables, a Queue over them, and a function that deletes them.
func exampleSetup(ctx context.Context) (*table.Table[Customer], *table.Table[EmailIndex], *eventual.Queue, func()) {
	cc, dropCustomers, err := tabletest.ScratchTable(ctx, "customers")
	if err != nil {
		log.Fatal(err)
	}
	ic, dropIndex, err := tabletest.ScratchTable(ctx, "byemail")
	if err != nil {
		log.Fatal(err)
	}
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	qo := &azqueue.ClientOptions{}
	retry.Default.ApplyTo(&qo.ClientOptions)
	qsvc, err := azqueue.NewServiceClientFromConnectionString(cs, qo)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprint("intents-", time.Now().UnixNano())
	queues := []string{name, name + "-poison"}
	for _, n := range queues {
		if _, err := qsvc.CreateQueue(ctx, n, nil); err != nil {
			log.Fatal(err)
		}
	}
	customers, _ := table.New[Customer](cc, nil)
	index, _ := table.New[EmailIndex](ic, nil)
	q, err := eventual.New(qsvc.NewQueueClient(queues[0]), qsvc.NewQueueClient(queues[1]), &eventual.Options{Tables: []*aztables.Client{cc}})
	if err != nil {
		log.Fatal(err)
	}
	return customers, index, q, func() {
		dropCustomers()
		dropIndex()
		for _, n := range queues {
			_, _ = qsvc.DeleteQueue(ctx, n, nil)
		}
	}
}
