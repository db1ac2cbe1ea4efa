package transfer

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestWriterRefusedByService: an entity the profile allows but the
// service refuses (a 600-character RowKey: Table Storage takes 1,024,
// Azurite 512) fails its transaction, which applies nothing; the writer
// rejects that entity and sends the others again. On Cosmos DB the
// profile refuses it before anything is sent.
func TestWriterRefusedByService(t *testing.T) {
	r := testrig.New(t)
	c := r.Table()
	tbl, err := target(c)
	if err != nil {
		t.Fatal(err)
	}
	ds := []table.Dynamic{{PartitionKey: "p", RowKey: strings.Repeat("k", 600)}}
	for i := range 5 {
		ds = append(ds, table.Dynamic{PartitionKey: "p", RowKey: fmt.Sprint(i), Properties: map[string]any{"N": int32(i)}})
	}
	o := (*Options)(nil).orDefault()
	rej := &listed{max: 10}
	w := &writer{t: tbl, opts: &o, rej: rej}
	if err := w.write(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	if rej.nrej != 1 || rej.rej[0].RowKey != ds[0].RowKey || w.wrote != 5 {
		t.Fatalf("rejected %d (%v), wrote %d", rej.nrej, rej.rej, w.wrote)
	}
	wantTxns := 2 // the refused transaction, then the others again
	if testrig.Cosmos() {
		wantTxns = 1 // refused by the profile: never sent
	}
	if w.txns != wantTxns {
		t.Fatalf("%d transactions, want %d", w.txns, wantTxns)
	}
	n := 0
	for range testrig.NewTable[table.Dynamic](t, r.Clean(c)).Query(context.Background(), nil) {
		n++
	}
	if n != 5 {
		t.Fatalf("%d entities stored, want 5", n)
	}
}
