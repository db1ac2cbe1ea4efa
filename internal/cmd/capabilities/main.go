// Command capabilities prints tablekit's capability matrix (pattern and
// operation × table service: supported and how, refused, failed) from
// what tests actually proved: it reads the output of go test -json (files
// named as arguments, or standard input), takes the capabilities the
// tests claimed (internal/testrig's Claim logs them, on the service the
// test ran against), and counts a claim only when its test passed.
//
//	go test -count=1 -json -run Cosmos ./... | go run ./internal/cmd/capabilities
//
// make capabilities runs exactly that: on Azurite and under the Cosmos DB
// simulation, or on the account of AZURE_STORAGE_CONNECTION_STRING (see
// the capability matrix in docs/cosmos.md). It prints a Markdown table and
// exits with status 1 when a test in its input failed.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// prefix starts the lines internal/testrig's Claim logs (testrig's
// CapabilityPrefix; a command cannot import a test package's helpers
// without their dependencies, so it is repeated here and tested).
const prefix = "capability: "

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// claim is one capability a test claimed (testrig.Capability).
type claim struct {
	Service   string `json:"service"`
	Pattern   string `json:"pattern"`
	Operation string `json:"operation"`
	Refused   bool   `json:"refused"`
	How       string `json:"how"`
}

// test names one test of one package.
type test struct{ pkg, name string }

// matrix is what the input proved.
type matrix struct {
	claims  map[test][]claim
	results map[test]string // pass, fail or skip
}

func main() {
	var inputs []io.Reader
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "capabilities:", err)
			os.Exit(2)
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = append(inputs, os.Stdin)
	}
	m := matrix{claims: map[test][]claim{}, results: map[test]string{}}
	for _, in := range inputs {
		if err := m.read(in); err != nil {
			fmt.Fprintln(os.Stderr, "capabilities:", err)
			os.Exit(2)
		}
	}
	failed := m.write(os.Stdout)
	if failed {
		os.Exit(1)
	}
}

// read adds the claims and results of one go test -json stream. Lines that
// are not JSON (build output) are skipped.
func (m *matrix) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		t := test{e.Package, e.Test}
		switch e.Action {
		case "pass", "fail", "skip":
			m.results[t] = e.Action
		case "output":
			_, rest, ok := strings.Cut(e.Output, prefix)
			if !ok {
				continue
			}
			var c claim
			if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &c); err != nil {
				return fmt.Errorf("%s %s: a claim that is not JSON: %q", e.Package, e.Test, rest)
			}
			m.claims[t] = append(m.claims[t], c)
		}
	}
	return sc.Err()
}

// services orders the columns: the services tablekit knows, in this
// order, then any other.
var services = []string{"Azurite", "Azure Table Storage", "Cosmos DB (simulated)", "Cosmos DB"}

// write prints the matrix as a Markdown table and the failed tests; it
// reports whether a test failed.
func (m *matrix) write(w io.Writer) bool {
	type row struct{ pattern, op string }
	cells := map[row]map[string]string{}
	seen := map[string]bool{}
	for t, cs := range m.claims {
		result := m.results[t]
		for _, c := range cs {
			r := row{c.Pattern, c.Operation}
			if cells[r] == nil {
				cells[r] = map[string]string{}
			}
			seen[c.Service] = true
			cell := "not proven (the test did not finish)"
			switch {
			case result == "fail":
				cell = "**FAILED** (" + t.name + ")"
			case result == "skip":
				cell = "skipped"
			case result == "pass" && c.Refused:
				cell = "refused: " + c.How
			case result == "pass":
				cell = "supported: " + c.How
			}
			// Of several claims for a cell, a failure shows.
			if old, ok := cells[r][c.Service]; !ok || !strings.HasPrefix(old, "**FAILED**") {
				cells[r][c.Service] = cell
			}
		}
	}
	var cols []string
	for _, s := range services {
		if seen[s] {
			cols = append(cols, s)
			delete(seen, s)
		}
	}
	for s := range seen {
		cols = append(cols, s)
	}
	slices.Sort(cols[len(cols)-len(seen):])
	rows := make([]row, 0, len(cells))
	for r := range cells {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(a.pattern, b.pattern), cmp.Compare(a.op, b.op)) })
	fmt.Fprintf(w, "| pattern | operation | %s |\n", strings.Join(cols, " | "))
	fmt.Fprintf(w, "|---|---|%s\n", strings.Repeat("---|", len(cols)))
	for _, r := range rows {
		line := []string{r.pattern, r.op}
		for _, s := range cols {
			line = append(line, cmp.Or(cells[r][s], "not run"))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(line, " | "))
	}
	var failed []string
	for t, res := range m.results {
		if res == "fail" {
			failed = append(failed, t.pkg+" "+t.name)
		}
	}
	slices.Sort(failed)
	if len(failed) > 0 {
		fmt.Fprintf(w, "\n%d tests failed:\n", len(failed))
		for _, f := range failed {
			fmt.Fprintln(w, "  "+f)
		}
	}
	return len(failed) > 0
}
