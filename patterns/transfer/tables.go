package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/tablename"
	"github.com/tablekit/tablekit/patterns/table"
)

// setFormatID is the format of a set's list (<prefix>/tables.json); a
// list of another format is refused.
const setFormatID = "tablekit-transfer-tables/1"

// maxTables is the most tables one set holds; maxSet the most bytes its
// list may have when read back (1,000 names of 63 bytes are about 66 KB).
const (
	maxTables = 1000
	maxSet    = 1 << 20
)

// tableSet is the list of an export of several tables: the blob
// <prefix>/tables.json, written before any of them is exported. Each
// table's export is an ordinary one at <prefix>/<name> (see manifest).
type tableSet struct {
	Format  string    `json:"format"`
	Tables  []string  `json:"tables"`
	Started time.Time `json:"started"`
}

func setName(prefix string) string { return prefix + "/tables.json" }

// checkTables checks the names of a set: 1 to maxTables valid table
// names, none twice (table names are case-insensitive), each giving a
// valid prefix under prefix ("" for names that are not blob paths: the
// targets of a Rename). mark marks what it returns (ErrInvalid for a
// caller's list, ErrCorrupt for one read back).
func checkTables(names []string, prefix string, mark error) error {
	if len(names) == 0 || len(names) > maxTables {
		return fmt.Errorf("%w: a set of %d tables: want 1 to %d", mark, len(names), maxTables)
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if err := tablename.Check(n); err != nil {
			return fmt.Errorf("%w: %w", mark, err)
		}
		if seen[strings.ToLower(n)] {
			return fmt.Errorf("%w: table %q is twice in the set", mark, n)
		}
		seen[strings.ToLower(n)] = true
		if prefix == "" {
			continue
		}
		if err := checkPrefix(prefix + "/" + n); err != nil {
			return fmt.Errorf("%w: %w", mark, err)
		}
	}
	return nil
}

// readSet reads and checks the list of the set at prefix; nil when there
// is none.
func readSet(ctx context.Context, c *container.Client, prefix string) (*tableSet, error) {
	b, _, err := readBlob(ctx, c, setName(prefix), maxSet, true)
	if err != nil || b == nil {
		return nil, err
	}
	var s tableSet
	if err := strictJSON(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, setName(prefix), err)
	}
	if s.Format != setFormatID {
		return nil, fmt.Errorf("%w: %s: format %.40q, want %q", ErrCorrupt, setName(prefix), s.Format, setFormatID)
	}
	if err := checkTables(s.Tables, prefix, ErrCorrupt); err != nil {
		return nil, fmt.Errorf("%s: %w", setName(prefix), err)
	}
	return &s, nil
}

// writeSet writes the list s of a new set at prefix. A resend of a write
// whose response was lost finds its own write (Started makes every list
// its own): the list then holds exactly what was sent, and it applied.
func writeSet(ctx context.Context, c *container.Client, prefix string, s *tableSet) error {
	b := mustJSON(s)
	_, err := putIf(ctx, c, setName(prefix), b, "")
	if !errors.Is(err, errChanged) {
		return err
	}
	if got, rerr := readSet(ctx, c, prefix); rerr == nil && got != nil && bytes.Equal(mustJSON(got), b) {
		return nil
	}
	return fmt.Errorf("%w: %s (written meanwhile)", ErrExists, setName(prefix))
}

// ExportedTables returns the names of the tables of the set exported
// under prefix in src (ExportTables), as its list names them, checked as
// ImportTables checks it: for an operator to see what a backup holds, or
// to check the names a Rename is given. ErrInvalid when prefix holds no
// set. Round trips: 1.
func ExportedTables(ctx context.Context, src *container.Client, prefix string) ([]string, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	s, err := readSet(ctx, src, prefix)
	switch {
	case err != nil:
		return nil, err
	case s == nil:
		return nil, fmt.Errorf("%w: no set of tables at %s (no %s)", ErrInvalid, prefix, setName(prefix))
	}
	return s.Tables, nil
}

// ExportTables exports the tables of src called tables, one after
// another, as one set under prefix in dst: each as Export exports it, to
// <prefix>/<name>, after a list of the set (<prefix>/tables.json) that
// ImportTables and VerifyExportTables follow. Use it for tables that
// belong together: a rotation's periods (rotation.Tables.Periods names
// them), an index table beside its primary, a whole application's
// tables. Each table is exported as a scan, on its own (see Guarantee in
// the package doc): a set is no more a snapshot across
// its tables than a table is across its rows, so restore a primary and
// its index with the patterns' repairs in mind (secondaryindex.Check and
// Rebuild).
//
// opts applies to each table (Ranges, Since, Blobs with each table's own
// Prefix when Blobs.Prefix is empty, and so on); Progress counts the whole
// set. With opts.Resume it continues an unfinished set (the list must
// name the same tables in the same order), each table from its manifest;
// without, a prefix that holds a set is ErrExists. The names are checked
// before any request: 1 to 1,000 valid table names, none twice.
//
// Before the list is written, every table is checked as Export checks
// it (Since refused on Cosmos DB) and read once (a page of at most one
// entity): a table that does not exist is refused (table.ErrTableNotFound)
// with nothing written. A table deleted after the list was written (a
// rotation's period swept meanwhile) fails its export on every Resume:
// export the other tables as a new set.
//
// It returns a Summary per table (Summary.Table names it), in the list's
// order, and stops at the first table that fails (its Summary the last
// returned); a table whose rows were left out (ErrRejected) does not stop
// it, and the error then names every such table. For an incremental set
// (Since), the next set's watermark is the first table's Summary.Started,
// the earliest.
//
// Round trips: 1 to read the list; a new set's, 1 per table to check it
// and 1 to write the list; then each table's Export.
func ExportTables(ctx context.Context, src *aztables.ServiceClient, tables []string, dst *container.Client, prefix string, opts *Options) ([]Summary, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	if err := checkTables(tables, prefix, ErrInvalid); err != nil {
		return nil, err
	}
	o := opts.orDefault()
	s, err := readSet(ctx, dst, prefix)
	switch {
	case err != nil:
		return nil, err
	case s != nil && !o.Resume:
		return nil, fmt.Errorf("%w: %s", ErrExists, setName(prefix))
	case s != nil && !slices.Equal(s.Tables, tables):
		return nil, fmt.Errorf("%w: the set at %s is of the tables %.200q: not these", ErrInvalid, prefix, s.Tables)
	case s == nil:
		for _, name := range tables {
			if err := exportable(ctx, table.NewClient(src, name), o.Since); err != nil {
				return nil, err
			}
		}
		s = &tableSet{Format: setFormatID, Tables: tables, Started: time.Now().UTC()}
		if err := writeSet(ctx, dst, prefix, s); err != nil {
			return nil, err
		}
	}
	if err := o.step("set"); err != nil {
		return nil, err
	}
	return eachTable(ctx, tables, tables, &o, nil, func(o *Options, name, _ string) (Summary, error) {
		return Export(ctx, table.NewClient(src, name), dst, prefix+"/"+name, o)
	})
}

// exportable checks, before a set's list is written, what Export would
// refuse of the table of c only after its manifest is written: Since on a
// service that cannot filter on it, and a table that does not exist (a
// page of at most one entity).
func exportable(ctx context.Context, c *aztables.Client, since time.Time) error {
	t, err := source(c)
	if err != nil {
		return err
	}
	if err := checkSince(t, since); err != nil {
		return err
	}
	if _, err := t.QueryPage(ctx, &table.Query{PageSize: 1, Select: []string{"RowKey"}}); err != nil {
		return wrap(err, "reading table %s", t.Name())
	}
	return nil
}

// ImportTables imports every table of the set exported under prefix in
// src (ExportTables) into the table of dst called opts.Rename(name), by
// default the same name, creating it when missing: each as Import
// imports it, checkpoint and Resume included. Before anything is written
// it reads the set's list and every table's manifest: the list is
// checked as untrusted input (names, count), and every export must be
// Complete and of the table the list names, and hold blobs (made with
// Options.Blobs) just when TargetBlobs is given; two tables renamed to one
// target are refused, and so is a TargetBlobs.Prefix when more than one
// table holds blobs (their Stores would share blobs that each one's Sweep
// takes for orphans). TargetBlobs applies to each table, its Prefix by
// default the target table's name.
//
// It returns a Summary per table (Summary.Table names the target), in
// the list's order, and stops at the first table that fails (its Summary
// the last returned); a table
// with rejects (ErrRejected) does not stop it, and the error then names
// every such table. Progress counts the whole set, its Total known from
// the manifests.
//
// Round trips: 1 for the list, 1 per table for its manifest and 1 to
// create its table, then each table's Import.
func ImportTables(ctx context.Context, src *container.Client, prefix string, dst *aztables.ServiceClient, opts *Options) ([]Summary, error) {
	names, targets, totals, err := openSet(ctx, src, prefix, opts, true)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := table.CreateTable(ctx, dst, t); err != nil {
			return nil, err
		}
	}
	o := opts.orDefault()
	return eachTable(ctx, names, targets, &o, totals, func(o *Options, name, target string) (Summary, error) {
		return Import(ctx, src, prefix+"/"+name, table.NewClient(dst, target), o)
	})
}

// VerifyExportTables compares every table of the set exported under
// prefix in src (ExportTables) with the table of dst called
// opts.Rename(name), by default the same name, as VerifyExport compares
// one; the export is checked as ImportTables checks it. A table that
// differs (ErrMismatch) does not stop it, and the error then names every
// such table; a missing target table is an error that stops it.
//
// Round trips: 1 for the list, 1 per table for its manifest, then each
// table's VerifyExport.
func VerifyExportTables(ctx context.Context, src *container.Client, prefix string, dst *aztables.ServiceClient, opts *Options) ([]Summary, error) {
	names, targets, _, err := openSet(ctx, src, prefix, opts, false)
	if err != nil {
		return nil, err
	}
	o := opts.orDefault()
	return eachTable(ctx, names, targets, &o, nil, func(o *Options, name, target string) (Summary, error) {
		return VerifyExport(ctx, src, prefix+"/"+name, table.NewClient(dst, target), o)
	})
}

// openSet reads the set at prefix for ImportTables (writes) and
// VerifyExportTables: its list, the target of each table (opts.Rename),
// checked, and each table's manifest, which must be Complete, of that
// table, and hold blobs just when opts.TargetBlobs is given. It returns the
// number of entities of each table.
func openSet(ctx context.Context, src *container.Client, prefix string, opts *Options, writes bool) (names, targets []string, totals []int64, err error) {
	if err := opts.check(); err != nil {
		return nil, nil, nil, err
	}
	if names, err = ExportedTables(ctx, src, prefix); err != nil {
		return nil, nil, nil, err
	}
	targets = make([]string, len(names))
	for i, name := range names {
		targets[i] = name
		if opts != nil && opts.Rename != nil {
			targets[i] = opts.Rename(name)
		}
	}
	if err := checkTables(targets, "", ErrInvalid); err != nil {
		return nil, nil, nil, fmt.Errorf("the targets of Options.Rename: %w", err)
	}
	totals = make([]int64, len(names))
	withBlobs := 0
	for i, name := range names {
		m, _, err := readManifest(ctx, src, prefix+"/"+name)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case m == nil:
			return nil, nil, nil, fmt.Errorf("%w: table %s of the set at %s was not exported (no %s): resume the export", ErrInvalid, name, prefix, manifestName(prefix+"/"+name))
		case !m.Complete:
			return nil, nil, nil, fmt.Errorf("%w: the export of table %s at %s is not complete: resume the export", ErrInvalid, name, prefix)
		case !strings.EqualFold(m.Table, name):
			return nil, nil, nil, fmt.Errorf("%w: %s is an export of table %.70q, not of %s", ErrCorrupt, manifestName(prefix+"/"+name), m.Table, name)
		case (m.Blobs != "") != (opts != nil && opts.TargetBlobs != nil):
			return nil, nil, nil, fmt.Errorf("%w: the export of table %s at %s holds blobs (Prefix %.40q) and Options.TargetBlobs is %v: both or neither", ErrInvalid, name, prefix, m.Blobs, opts != nil && opts.TargetBlobs != nil)
		}
		if m.Blobs != "" {
			withBlobs++
		}
		totals[i] = m.entities()
	}
	if writes && withBlobs > 1 && opts.TargetBlobs.Prefix != "" {
		return nil, nil, nil, fmt.Errorf("%w: %d tables of the set hold blobs, and one TargetBlobs.Prefix (%.40q) would give their Stores the same blobs: leave it empty (each target's own name)", ErrInvalid, withBlobs, opts.TargetBlobs.Prefix)
	}
	return names, targets, totals, nil
}

// eachTable runs do for each table of a set (names, and the targets of
// ImportTables and VerifyExportTables), in order, with o's Progress
// counting the whole set: totals, when known, are the tables' numbers of
// entities. It stops at the first error other than ErrRejected and
// ErrMismatch, which are reported, each naming its table, when every
// table is done.
func eachTable(ctx context.Context, names, targets []string, o *Options, totals []int64, do func(o *Options, name, target string) (Summary, error)) ([]Summary, error) {
	sums := make([]Summary, 0, len(names))
	var (
		reported       []error
		entities, size int64    // of the tables done, as their Progress counted
		last           Progress // the last Progress of the table under way
		start          = time.Now()
	)
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return sums, err
		}
		one := *o
		if report := o.Progress; report != nil {
			var later int64
			for _, n := range totals[min(i+1, len(totals)):] {
				later += n
			}
			before, beforeSize := entities, size
			one.Progress = func(p Progress) {
				last = p
				total := int64(0)
				if totals != nil { // p.Total: this table's entities to do in this call
					total = before + p.Total + later
				}
				report(progressOf(before+p.Entities, beforeSize+p.Bytes, total, start))
			}
		}
		last = Progress{}
		sum, err := do(&one, name, targets[i])
		sum.Table = targets[i]
		sums = append(sums, sum)
		// What this table's Progress counted (an Import's counts its
		// rejects too, its Summary not): the next table's counts go on
		// from there.
		entities += last.Entities
		size += last.Bytes
		switch {
		case errors.Is(err, ErrRejected), errors.Is(err, ErrMismatch):
			reported = append(reported, fmt.Errorf("table %s: %w", targets[i], err))
		case err != nil:
			return sums, fmt.Errorf("table %s: %w", targets[i], err)
		}
	}
	return sums, errors.Join(reported...)
}
