package indexentity_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// The guide's example: all employees of the Sales department named Jones,
// through an index entity in the Sales partition, kept in the same
// transaction as each employee. A rename moves the id between two index
// entities in one transaction over three entities.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "staff")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	employees, err := table.New[Employee](c, nil)
	if err != nil {
		log.Fatal(err)
	}

	byName, err := indexentity.New(employees, "LastName", func(e *Employee) string { return e.LastName }, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{Department: "Sales", ID: "000123", FirstName: "Ana", LastName: "Jones"},
		{Department: "Sales", ID: "000155", FirstName: "Ben", LastName: "Smith"},
		{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones"},
	} {
		if _, err := byName.Insert(ctx, e); err != nil { // index read + one transaction
			log.Fatal(err)
		}
	}
	var ana table.Entity[Employee]
	for e, err := range byName.Find(ctx, "Sales", "Jones") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("Jones:", e.RowKey, e.Value.FirstName)
		if e.Value.FirstName == "Ana" {
			ana = e
		}
	}

	ana.Value.LastName = "Smith"
	if _, err := byName.Update(ctx, ana.Value, ana.ETag); err != nil {
		log.Fatal(err)
	}
	ids, _ := byName.FindIDs(ctx, "Sales", "Smith")
	fmt.Println("Smiths:", ids)
	// Output:
	// Jones: 000123 Ana
	// Jones: 000223 Jo
	// Smiths: [{Sales 000123} {Sales 000155}]
}

// The blob store: one list per value across every department, kept
// eventually by a worker from intents committed with each write. The lists
// follow once the worker has run; FindIDs with no partition is the guide's
// organisation-wide lookup.
func Example_blob() {
	ctx := context.Background()
	tc, cleanup, err := tabletest.ScratchTable(ctx, "staff")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	qo, bo := &azqueue.ClientOptions{}, &azblob.ClientOptions{}
	retry.Default.ApplyTo(&qo.ClientOptions)
	retry.Default.ApplyTo(&bo.ClientOptions)
	qsvc, err := azqueue.NewServiceClientFromConnectionString(cs, qo)
	if err != nil {
		log.Fatal(err)
	}
	bsvc, err := azblob.NewClientFromConnectionString(cs, bo)
	if err != nil {
		log.Fatal(err)
	}
	n := time.Now().UnixNano()
	queue, poison, lists := fmt.Sprint("intents-", n), fmt.Sprint("poison-", n), fmt.Sprint("lists-", n)
	for _, q := range []string{queue, poison} {
		if _, err := qsvc.CreateQueue(ctx, q, nil); err != nil {
			log.Fatal(err)
		}
		defer func() { _, _ = qsvc.DeleteQueue(ctx, q, nil) }()
	}
	if _, err := bsvc.CreateContainer(ctx, lists, nil); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = bsvc.DeleteContainer(ctx, lists, nil) }()

	employees, err := table.New[Employee](tc, nil)
	if err != nil {
		log.Fatal(err)
	}
	q, err := eventual.New(qsvc.NewQueueClient(queue), qsvc.NewQueueClient(poison), &eventual.Options{Tables: []*aztables.Client{tc}})
	if err != nil {
		log.Fatal(err)
	}
	byName, err := indexentity.New(employees, "LastName", func(e *Employee) string { return e.LastName }, &indexentity.Options{
		Blobs: bsvc.ServiceClient().NewContainerClient(lists),
		Queue: q,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{Department: "Sales", ID: "000123", FirstName: "Ana", LastName: "Jones"},
		{Department: "Marketing", ID: "000108", FirstName: "Cy", LastName: "Jones"},
		{Department: "Sales", ID: "000155", FirstName: "Ben", LastName: "Smith"},
	} {
		if _, err := byName.Insert(ctx, e); err != nil { // the employee and an intent, together
			log.Fatal(err)
		}
	}
	if err := byName.Delete(ctx, "Sales", "000155", azcore.ETagAny); err != nil {
		log.Fatal(err)
	}

	w, err := eventual.NewWorker(q, []eventual.Handler{byName.Handler()}, &eventual.WorkerOptions{Idle: &retry.Policy{Default: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
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

	all, _ := byName.FindIDs(ctx, "", "Jones")
	fmt.Println("every Jones:", all)
	sales, _ := byName.FindIDs(ctx, "Sales", "Jones")
	fmt.Println("Joneses in Sales:", sales)
	smiths, _ := byName.FindIDs(ctx, "", "Smith")
	fmt.Println("Smiths:", len(smiths))
	// Output:
	// every Jones: [{Marketing 000108} {Sales 000123}]
	// Joneses in Sales: [{Sales 000123}]
	// Smiths: 0
}
