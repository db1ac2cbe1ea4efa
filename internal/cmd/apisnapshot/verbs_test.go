package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The verb table of patterns/table's doc, as data: one row per verb, with
// the shape every pattern package's method of that name must have. The
// test reads the exported API with go/types, checks every such method
// against its row (TestVerbs), and generates the doc's table from the rows
// and the packages that have each verb (TestVerbTable): doc and code
// cannot disagree.
//
// Shapes are sequences of kinds (below): ctx first, then what addresses
// the entity or range, the value, and options last and nil-able. A kind
// marked optional ([, opts], [, mode]) is there only where a package has
// that choice.

// kind is one parameter or result a shape allows.
type kind struct {
	name     string // as the doc writes it
	match    func(*matcher, types.Type) bool
	optional bool // may be absent
	many     bool // zero or more
}

// matcher holds what one method's match has bound: the type of from (to
// must be the same) and of value (one type per verb across packages).
type matcher struct {
	table string // patterns/table's import path
	bound map[string]types.Type
}

// The kinds.
var (
	ctx   = kind{name: "ctx", match: func(m *matcher, t types.Type) bool { return isNamed(t, "context", "Context") }}
	pk    = kind{name: "pk", match: isString}
	rk    = kind{name: "rk", match: isString}
	etag  = kind{name: "etag", match: func(m *matcher, t types.Type) bool { return isNamed(t, azcorePath, "ETag") }}
	v     = kind{name: "v", match: isTypeParam}
	fn    = kind{name: "fn", match: isModifyFunc}
	n     = kind{name: "n", match: func(m *matcher, t types.Type) bool { return types.Identical(t, types.Typ[types.Int]) }}
	q     = kind{name: "q", match: func(m *matcher, t types.Type) bool { return isPointerTo(t, m.table, "Query") }}
	at    = kind{name: "at", match: func(m *matcher, t types.Type) bool { return isNamed(t, "time", "Time") }}
	mode  = kind{name: "mode", optional: true, match: func(m *matcher, t types.Type) bool { return isNamed(t, m.table, "Mode") }}
	opts  = kind{name: "opts", optional: true, match: isOptions}
	scope = kind{name: "scope", many: true, match: isScope}
	// from binds its type; to must have the same.
	from = kind{name: "from", match: func(m *matcher, t types.Type) bool { m.bound["from"] = t; return true }}
	to   = kind{name: "to", match: func(m *matcher, t types.Type) bool { return types.Identical(t, m.bound["from"]) }}
	// value binds its type, compared across packages (one type per verb).
	value  = kind{name: "value", match: func(m *matcher, t types.Type) bool { m.bound["value"] = t; return true }}
	cursor = kind{name: "cursor", match: func(m *matcher, t types.Type) bool { return isNamed(t, m.table, "Cursor") }}

	errKind  = kind{name: "error", match: func(m *matcher, t types.Type) bool { return isNamed(t, "", "error") }}
	entity   = kind{name: "E", match: func(m *matcher, t types.Type) bool { return embeds(t, m.table, "Entity") }}
	result   = kind{name: "R", match: func(m *matcher, t types.Type) bool { return embeds(t, m.table, "Result") }}
	entities = kind{name: "[]E", match: func(m *matcher, t types.Type) bool {
		s, ok := t.(*types.Slice)
		return ok && embeds(s.Elem(), m.table, "Entity")
	}}
	seq = kind{name: "iter.Seq2[E, error]", match: func(m *matcher, t types.Type) bool {
		args, ok := instance(t, "iter", "Seq2")
		return ok && embeds(args[0], m.table, "Entity") && isNamed(args[1], "", "error")
	}}
	page = kind{name: "Page[E]", match: func(m *matcher, t types.Type) bool {
		args, ok := instance(t, m.table, "Page")
		return ok && embeds(args[0], m.table, "Entity")
	}}
	pageOfT = kind{name: "Page[T]", match: func(m *matcher, t types.Type) bool {
		_, ok := instance(t, m.table, "Page")
		return ok
	}}
	op     = kind{name: "Op", match: func(m *matcher, t types.Type) bool { return isNamed(t, m.table, "Op") }}
	change = kind{name: "Change", match: func(m *matcher, t types.Type) bool { return isNamed(t, m.table, "Change") }}
	drift  = kind{name: "Drift", match: func(m *matcher, t types.Type) bool { return isStructNamed(t, "Drift") }}
	swept  = kind{name: "Swept", match: func(m *matcher, t types.Type) bool { return isStructNamed(t, "Swept") }}
)

const azcorePath = "github.com/Azure/azure-sdk-for-go/sdk/azcore"

// row is one verb of the table.
type row struct {
	verb    string   // the doc's verb column
	names   []string // the methods it covers
	shape   []string // the doc's shape column, one entry per line
	params  []kind
	results []kind
	// ops: the row covers the methods named a verb's name plus "Op" (no
	// ctx, result Op) or plus "Ops" (result (Change, error)), each with its
	// verb's parameters.
	ops string
	// same: rows whose value must have one type across packages.
	same string
}

// rows is the verb table, in the doc's order.
var rows = []row{
	{verb: "Get", names: []string{"Get"}, shape: []string{"Get(ctx, pk, rk[, opts]) (E, error)"},
		params: []kind{ctx, pk, rk, opts}, results: []kind{entity, errKind}},
	{verb: "Insert", names: []string{"Insert"}, shape: []string{"Insert(ctx, v) (R, error)"},
		params: []kind{ctx, v}, results: []kind{result, errKind}},
	{verb: "Upsert", names: []string{"Upsert"}, shape: []string{"Upsert(ctx, v[, mode]) (R, error)"},
		params: []kind{ctx, v, mode}, results: []kind{result, errKind}},
	{verb: "Update", names: []string{"Update"}, shape: []string{"Update(ctx, v, etag[, mode]) (R, error)"},
		params: []kind{ctx, v, etag, mode}, results: []kind{result, errKind}},
	{verb: "Delete", names: []string{"Delete"}, shape: []string{"Delete(ctx, pk, rk, etag) error"},
		params: []kind{ctx, pk, rk, etag}, results: []kind{errKind}},
	{verb: "Modify", names: []string{"Modify"}, shape: []string{"Modify(ctx, pk, rk, fn[, opts]) (E, error)"},
		params: []kind{ctx, pk, rk, fn, opts}, results: []kind{entity, errKind}},
	{verb: "...Op", ops: "Op", shape: []string{"InsertOp(v), UpsertOp(v[, mode]),", "UpdateOp(v, etag[, mode]),", "DeleteOp(pk, rk, etag), AppendOp(scope..., v):", "the verb's arguments without ctx; Op"}},
	{verb: "...Ops", ops: "Ops", shape: []string{"InsertOps(ctx, v), UpdateOps(ctx, v, etag),", "DeleteOps(ctx, pk, rk, etag), ModifyOps(...):", "the verb's arguments; (Change, error)"}},
	{verb: "Lookup", names: []string{"Lookup"}, same: "value", shape: []string{"Lookup(ctx, scope..., value[, opts]) (E, error)"},
		params: []kind{ctx, scope, value, opts}, results: []kind{entity, errKind}},
	{verb: "Find", names: []string{"Find"}, same: "value", shape: []string{"Find(ctx, scope..., value[, opts])", "iter.Seq2[E, error]; value: Lookup's type"},
		params: []kind{ctx, scope, value, opts}, results: []kind{seq}},
	{verb: "Range", names: []string{"Range"}, shape: []string{"Range(ctx, scope..., from, to[, opts])", "iter.Seq2[E, error]"},
		params: []kind{ctx, scope, from, to, opts}, results: []kind{seq}},
	{verb: "RangePage", names: []string{"RangePage"}, shape: []string{"RangePage(ctx, scope..., from, to, cursor[, opts])", "(Page[E], error): a page and a resumable Next"},
		params: []kind{ctx, scope, from, to, cursor, opts}, results: []kind{page, errKind}},
	{verb: "ListPage", names: []string{"ListPage"}, shape: []string{"ListPage(ctx, scope..., cursor[, opts])", "(Page[E], error)"},
		params: []kind{ctx, scope, cursor, opts}, results: []kind{page, errKind}},
	{verb: "QueryPage", names: []string{"QueryPage"}, shape: []string{"QueryPage(ctx, q) (Page[T], error): the cursor is", "q.Cursor, the page holds what Query yields"},
		params: []kind{ctx, q}, results: []kind{pageOfT, errKind}},
	{verb: "Latest", names: []string{"Latest"}, shape: []string{"Latest(ctx, scope..., n) ([]E, error)"},
		params: []kind{ctx, scope, n}, results: []kind{entities, errKind}},
	{verb: "Append", names: []string{"Append"}, shape: []string{"Append(ctx, scope..., v) (R, error)"},
		params: []kind{ctx, scope, v}, results: []kind{result, errKind}},
	{verb: "Check", names: []string{"Check", "Rebuild"}, shape: []string{"Check(ctx, scope...[, opts]) (Drift, error),", "Rebuild likewise"},
		params: []kind{ctx, scope, opts}, results: []kind{drift, errKind}},
	{verb: "Sweep", names: []string{"Sweep"}, shape: []string{"Sweep(ctx, scope...[, opts]) (Swept, error)"},
		params: []kind{ctx, scope, opts}, results: []kind{swept, errKind}},
	{verb: "Run", names: []string{"Run", "Drain"}, shape: []string{"Run(ctx) error, Drain(ctx) error"},
		params: []kind{ctx}, results: []kind{errKind}},
}

// exception is a package whose method departs from its row, and why; the
// doc shows its note beside the package.
type exception struct {
	pkg, method     string // package name, method name
	params, results []kind // the shape it has instead (nil: the row's)
	note            string // the doc's note: "(ctx, at, v)"
	reason          string
}

// exceptions are the departures from the table, each with its reason.
var exceptions = []exception{
	{pkg: "rotation", method: "Insert", params: []kind{ctx, at, v}, note: "(ctx, at, v)",
		reason: "the period's table is chosen by at, a time T need not hold"},
	{pkg: "bloblog", method: "Append", results: []kind{errKind}, note: "(error: buffered)",
		reason: "a Writer buffers entries into blocks; a later flush writes them, and Flush or Close reports it"},
	{pkg: "bloblog", method: "Range", results: []kind{{name: "iter.Seq2[Entry, error]", match: func(m *matcher, t types.Type) bool {
		args, ok := instance(t, "iter", "Seq2")
		return ok && isStructNamed(args[0], "Entry") && isNamed(args[1], "", "error")
	}}}, note: "(Entry: no keys, no ETag)",
		reason: "entries are lines of append blobs: they have no keys or ETag to put in an Entity"},
}

// notes are the doc's remarks beside a package that has a verb's shape.
var notes = map[[2]string]string{
	{"Get", "dataseries"}:    "(zeros, not ErrNotFound)",
	{"Delete", "dataseries"}: "(the whole series)",
}

// verbMethod is one exported method of a pattern package that a row covers.
type verbMethod struct {
	pkg  *types.Package
	recv *types.Named
	fn   *types.Func
	row  *row
}

// String returns the method as go doc shows it: secondaryindex.(*Store[T]).Get(...) (...).
func (m verbMethod) String() string {
	sig := m.fn.Type().(*types.Signature)
	qf := qualifier(m.pkg)
	return fmt.Sprintf("%s.(%s).%s%s", m.pkg.Name(), receiver(sig, qf), m.fn.Name(), signature(sig, qf))
}

// patternPkgs returns the pattern packages among pkgs, packages of module
// modPath (patterns/tabletest, the test harness, aside).
func patternPkgs(modPath string, all []*types.Package) []*types.Package {
	var pkgs []*types.Package
	for _, pkg := range all {
		if strings.HasPrefix(pkg.Path(), modPath+"/patterns/") && pkg.Name() != "tabletest" {
			pkgs = append(pkgs, pkg)
		}
	}
	return pkgs
}

// verbMethods returns the methods of the pattern packages among pkgs that
// the rows cover, and those ending in Op or Ops whose verb has no row.
func verbMethods(modPath string, pkgs []*types.Package) (found, unknown []verbMethod) {
	byName := map[string]*row{}
	var opsRow, opRow *row
	for i := range rows {
		r := &rows[i]
		for _, name := range r.names {
			byName[name] = r
		}
		switch r.ops {
		case "Op":
			opRow = r
		case "Ops":
			opsRow = r
		}
	}
	for _, pkg := range patternPkgs(modPath, pkgs) {
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok || !tn.Exported() || tn.IsAlias() {
				continue
			}
			named, ok := tn.Type().(*types.Named)
			if !ok {
				continue
			}
			for i := range named.NumMethods() {
				fn := named.Method(i)
				if !fn.Exported() {
					continue
				}
				vm := verbMethod{pkg: pkg, recv: named, fn: fn, row: byName[fn.Name()]}
				if base, ok := strings.CutSuffix(fn.Name(), "Ops"); ok {
					vm.row = opsRow
					if byName[base] == nil && sibling(named, base) == nil {
						unknown = append(unknown, vm)
						continue
					}
				} else if base, ok := strings.CutSuffix(fn.Name(), "Op"); ok {
					vm.row = opRow
					if byName[base] == nil && sibling(named, base) == nil {
						unknown = append(unknown, vm)
						continue
					}
				}
				if vm.row != nil {
					found = append(found, vm)
				}
			}
		}
	}
	return found, unknown
}

// rowKinds returns the parameters and results m's row gives it: for
// XOp, X's parameters without ctx and the result Op; for XOps, X's
// parameters and (Change, error). X's parameters are its row's, or, for a
// verb of the package's own (dataseries' Set), those of the method X
// beside XOp, as written.
func rowKinds(m verbMethod) (params, results []kind) {
	r := m.row
	if r.ops != "" {
		base := strings.TrimSuffix(m.fn.Name(), r.ops)
		params = nil
		for i := range rows {
			if slices.Contains(rows[i].names, base) {
				params = rows[i].params
			}
		}
		if params == nil {
			qf := qualifier(m.pkg)
			for _, t := range tupleTypesOf(sibling(m.recv, base).Type().(*types.Signature).Params()) {
				written := typeString(t, qf)
				params = append(params, kind{name: written, match: func(_ *matcher, t types.Type) bool { return typeString(t, qf) == written }})
			}
		}
	}
	switch r.ops {
	case "Op":
		return params[1:], []kind{op}
	case "Ops":
		return params, []kind{change, errKind}
	}
	return r.params, r.results
}

// sibling returns the exported method named name of recv, or nil.
func sibling(recv *types.Named, name string) *types.Func {
	for i := range recv.NumMethods() {
		if m := recv.Method(i); m.Name() == name && m.Exported() {
			return m
		}
	}
	return nil
}

// exceptionFor returns m's exception, or nil.
func exceptionFor(m verbMethod) *exception {
	for i := range exceptions {
		if e := &exceptions[i]; e.pkg == m.pkg.Name() && e.method == m.fn.Name() {
			return e
		}
	}
	return nil
}

// want returns the parameters and results m must have, and its
// exception, if any.
func want(m verbMethod) (params, results []kind, exc *exception) {
	params, results = rowKinds(m)
	if exc = exceptionFor(m); exc != nil {
		if exc.params != nil {
			params = exc.params
		}
		if exc.results != nil {
			results = exc.results
		}
	}
	return params, results, exc
}

// matches reports whether sig has the parameters and results, and the
// type value bound to.
func matches(table string, sig *types.Signature, params, results []kind) (ok bool, value types.Type) {
	m := &matcher{table: table, bound: map[string]types.Type{}}
	if !matchKinds(m, tupleTypesOf(sig.Params()), params) {
		return false, nil
	}
	value = m.bound["value"]
	return matchKinds(m, tupleTypesOf(sig.Results()), results), value
}

// shapeOf writes kinds as the doc does: ctx, scope..., from, to[, opts].
func shapeOf(kinds []kind) string {
	var b strings.Builder
	for i, k := range kinds {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		switch {
		case k.optional:
			fmt.Fprintf(&b, "[%s%s]", sep, k.name)
		case k.many:
			fmt.Fprintf(&b, "%s%s...", sep, k.name)
		default:
			fmt.Fprintf(&b, "%s%s", sep, k.name)
		}
	}
	return b.String()
}

// matchKinds reports whether the types match the kinds in order, binding
// what the kinds bind in m.
func matchKinds(m *matcher, ts []types.Type, kinds []kind) bool {
	if len(kinds) == 0 {
		return len(ts) == 0
	}
	k := kinds[0]
	saved := cloneBound(m.bound)
	if len(ts) > 0 && k.match(m, ts[0]) {
		next := kinds[1:]
		if k.many {
			next = kinds // one more of the same
		}
		if matchKinds(m, ts[1:], next) {
			return true
		}
	}
	m.bound = saved
	if k.optional || k.many {
		if matchKinds(m, ts, kinds[1:]) {
			return true
		}
		m.bound = saved
	}
	return false
}

func cloneBound(b map[string]types.Type) map[string]types.Type {
	c := make(map[string]types.Type, len(b))
	for k, v := range b {
		c[k] = v
	}
	return c
}

// tupleTypesOf returns the types of a tuple; a variadic last parameter as
// its slice type.
func tupleTypesOf(t *types.Tuple) []types.Type {
	var ts []types.Type
	for i := range t.Len() {
		ts = append(ts, t.At(i).Type())
	}
	return ts
}

// deviations checks the verb methods of the pattern packages among pkgs,
// of module modPath, and returns one line per method that departs from
// its row, per method ending in Op or Ops with no verb row, per exception
// that its method does not need, and per group of rows whose values have
// several types; and the exceptions used.
func deviations(modPath string, pkgs []*types.Package) (out []string, used map[*exception]bool) {
	methods, unknown := verbMethods(modPath, pkgs)
	for _, u := range unknown {
		verb := strings.TrimSuffix(strings.TrimSuffix(u.fn.Name(), "s"), "Op")
		out = append(out, fmt.Sprintf("%s: no verb row for %s and no method %s beside it (add one, or rename the method)", u, verb, verb))
	}
	table := modPath + "/patterns/table"
	values := map[string]map[string][]string{} // same group -> value type -> methods
	used = map[*exception]bool{}
	for _, m := range methods {
		params, results, exc := want(m)
		sig := m.fn.Type().(*types.Signature)
		ok, value := matches(table, sig, params, results)
		if exc != nil {
			used[exc] = true
			rp, rr := rowKinds(m)
			if fits, v := matches(table, sig, rp, rr); fits {
				out = append(out, fmt.Sprintf("%s: has the table's shape; remove its exception", m))
				ok, value = true, v
			}
		}
		if !ok {
			want := "(" + shapeOf(params) + ") " + shapeOf(results)
			if len(results) > 1 {
				want = "(" + shapeOf(params) + ") (" + shapeOf(results) + ")"
			}
			if exc != nil {
				want += " (exception: " + exc.reason + ")"
			}
			out = append(out, fmt.Sprintf("%s: want %s%s", m, m.fn.Name(), want))
			continue
		}
		if m.row.same != "" && value != nil {
			if values[m.row.same] == nil {
				values[m.row.same] = map[string][]string{}
			}
			vt := types.TypeString(value, qualifier(nil))
			values[m.row.same][vt] = append(values[m.row.same][vt], m.pkg.Name()+"."+m.fn.Name())
		}
	}
	for group, types := range values {
		if len(types) < 2 {
			continue
		}
		var parts []string
		for t, ms := range types {
			parts = append(parts, fmt.Sprintf("%s in %s", t, strings.Join(ms, ", ")))
		}
		slices.Sort(parts)
		out = append(out, fmt.Sprintf("the %s of Lookup and Find has %d types, want one: %s", group, len(types), strings.Join(parts, "; ")))
	}
	slices.Sort(out)
	return out, used
}

// TestVerbs checks every pattern package's verb methods against the verb
// table's rows and reports every deviation at once.
func TestVerbs(t *testing.T) {
	mod := api(t)
	out, used := deviations(mod.Path, mod.Pkgs)
	for i := range exceptions {
		if e := &exceptions[i]; !used[e] {
			out = append(out, fmt.Sprintf("exception for %s.%s: no such method; remove it", e.pkg, e.method))
		}
	}
	if len(out) > 0 {
		t.Errorf("%d departures from the verb table (the rows and exceptions in internal/cmd/apisnapshot/verbs_test.go, the doc's table in %s); change the method, or add an exception with its reason:\n%s", len(out), docFile, strings.Join(out, "\n"))
	}
}

// docFile is the file holding the verb table, and docHeader its first line.
const (
	docFile   = "patterns/table/doc.go"
	docHeader = "//\tverb      shape"
)

// verbTable returns the doc's verb table: the rows' shapes, and the
// packages that have each verb (patterns/table first), with their notes.
func verbTable(mod *module) []string {
	methods, _ := verbMethods(mod.Path, mod.Pkgs)
	where := map[string][]string{} // verb -> packages
	for _, m := range methods {
		name := m.pkg.Name()
		note := notes[[2]string{m.row.verb, name}]
		if _, _, exc := want(m); exc != nil {
			note = exc.note
			if m.row.ops == "" && len(m.row.names) > 1 {
				note = m.fn.Name() + " " + note
			}
		}
		entry := name
		if note != "" {
			entry += " " + note
		}
		if !slices.Contains(where[m.row.verb], entry) {
			where[m.row.verb] = append(where[m.row.verb], entry)
		}
	}
	const verbWidth, width = 10, 100
	shapeWidth := 0
	for _, r := range rows {
		for _, line := range r.shape {
			shapeWidth = max(shapeWidth, len(line)+2)
		}
	}
	lines := []string{fmt.Sprintf("//\t%-*s%-*s%s", verbWidth, "verb", shapeWidth, "shape", "where")}
	for _, r := range rows {
		pkgs := where[r.verb]
		slices.SortFunc(pkgs, func(a, b string) int {
			if (a == "table") != (b == "table") {
				if a == "table" {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		if len(pkgs) == 0 {
			pkgs = []string{"(none)"}
		}
		whereLines := wrap(pkgs, width-verbWidth-shapeWidth)
		for i := 0; i < max(len(r.shape), len(whereLines)); i++ {
			verb, shape, w := "", "", ""
			if i == 0 {
				verb = r.verb
			}
			if i < len(r.shape) {
				shape = r.shape[i]
			}
			if i < len(whereLines) {
				w = whereLines[i]
			}
			line := fmt.Sprintf("//\t%-*s%-*s%s", verbWidth, verb, shapeWidth, shape, w)
			lines = append(lines, strings.TrimRight(line, " "))
		}
	}
	return lines
}

// wrap joins entries with commas into lines of at most width bytes,
// breaking only between entries (a longer entry has a line of its own).
func wrap(entries []string, width int) []string {
	var lines []string
	line := ""
	for i, e := range entries {
		if i < len(entries)-1 {
			e += ","
		}
		if line != "" && len(line)+1+len(e) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += e
	}
	return append(lines, line)
}

// docBlock returns the lines of doc.go's text and where its verb table
// is in them: from its header line to the first line that is not a table
// line (start == end when there is none).
func docBlock(text string) (lines []string, start, end int) {
	lines = strings.Split(text, "\n")
	start = slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, docHeader) })
	if start < 0 {
		return lines, 0, 0
	}
	end = start
	for end < len(lines) && strings.HasPrefix(lines[end], "//\t") {
		end++
	}
	return lines, start, end
}

// update makes TestVerbTable write the table it wants into doc.go (make
// api runs it so).
var update = flag.Bool("update", false, "write the verb table into "+docFile)

// TestVerbTable fails when the verb table in patterns/table's doc is not
// the one the rows and the code give, and prints the one wanted; with
// -update it writes that one into the doc instead.
func TestVerbTable(t *testing.T) {
	mod := api(t)
	path := filepath.Join(mod.Dir, docFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines, start, end := docBlock(string(data))
	if start == end {
		t.Fatalf("%s has no verb table (a line starting %q)", docFile, docHeader)
	}
	wanted := verbTable(mod)
	if slices.Equal(lines[start:end], wanted) {
		return
	}
	if *update {
		lines = slices.Concat(lines[:start], wanted, lines[end:])
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the verb table in %s differs from the rows and the code (make api writes it); want:\n%s", docFile, strings.Join(wanted, "\n"))
}

// The kinds' tests.

func isString(_ *matcher, t types.Type) bool { return types.Identical(t, types.Typ[types.String]) }

func isTypeParam(_ *matcher, t types.Type) bool { _, ok := t.(*types.TypeParam); return ok }

// isScope: what chooses a partition, log, index or table (a string, a
// table client).
func isScope(m *matcher, t types.Type) bool {
	return isString(m, t) || isPointerTo(t, "github.com/Azure/azure-sdk-for-go/sdk/data/aztables", "Client")
}

// isOptions: a pointer to a struct type named ...Options.
func isOptions(_ *matcher, t types.Type) bool {
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := p.Elem().(*types.Named)
	if !ok {
		return false
	}
	_, isStruct := n.Underlying().(*types.Struct)
	return isStruct && strings.HasSuffix(n.Obj().Name(), "Options")
}

// isModifyFunc: func(*T) error.
func isModifyFunc(m *matcher, t types.Type) bool {
	sig, ok := t.(*types.Signature)
	if !ok || sig.Params().Len() != 1 || sig.Results().Len() != 1 {
		return false
	}
	p, ok := sig.Params().At(0).Type().(*types.Pointer)
	return ok && isTypeParam(m, p.Elem()) && isNamed(sig.Results().At(0).Type(), "", "error")
}

// isNamed: the named type path.name ("" for the universe: error).
func isNamed(t types.Type, path, name string) bool {
	t = types.Unalias(t)
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Name() != name {
		return false
	}
	if n.Obj().Pkg() == nil {
		return path == ""
	}
	return n.Obj().Pkg().Path() == path
}

func isPointerTo(t types.Type, path, name string) bool {
	p, ok := t.(*types.Pointer)
	return ok && isNamed(p.Elem(), path, name)
}

// isStructNamed: a struct type of that name, in any package.
func isStructNamed(t types.Type, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Name() != name {
		return false
	}
	_, ok = n.Underlying().(*types.Struct)
	return ok
}

// instance returns the type arguments of t, an instance of path.name.
func instance(t types.Type, path, name string) ([]types.Type, bool) {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != path || n.Obj().Name() != name {
		return nil, false
	}
	var args []types.Type
	for i := range n.TypeArgs().Len() {
		args = append(args, n.TypeArgs().At(i))
	}
	return args, true
}

// embeds: t is path.name (an instance of it) or a struct embedding one.
func embeds(t types.Type, path, name string) bool {
	if _, ok := instance(t, path, name); ok {
		return true
	}
	st, ok := types.Unalias(t).Underlying().(*types.Struct)
	if !ok {
		return false
	}
	for i := range st.NumFields() {
		if f := st.Field(i); f.Embedded() {
			if _, ok := instance(f.Type(), path, name); ok {
				return true
			}
		}
	}
	return false
}

// TestVerbRules: the check finds each kind of departure in packages made
// for the test (a missing ETag, a ctx in an Op, from and to of two types,
// a result that is no envelope, arguments out of order, an Op of no verb,
// an Op of a package's own verb with that verb's ctx, values of two
// types), passes the shapes that follow the rows (and an Ops of a
// package's own verb), honours an exception and reports one that its
// method no longer needs.
func TestVerbRules(t *testing.T) {
	mod := api(t)
	const imports = `import (
	"context"
	"iter"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

var _ azcore.ETag
var _ iter.Seq[int]
var _ time.Time
var _ *aztables.Client

type S[T any] struct{}
type Options struct{ N int }
type Swept struct{ N int }
type Res struct {
	table.Result
	Partition string
}
`
	fake := typeCheck(t, mod, "fake", imports+`
func (s *S[T]) Get(ctx context.Context, pk, rk string) (table.Entity[T], error) { panic(0) }
func (s *S[T]) Insert(ctx context.Context, v T) (Res, error) { panic(0) }
func (s *S[T]) Update(ctx context.Context, v T, etag azcore.ETag, m table.Mode) (table.Result, error) { panic(0) }
func (s *S[T]) InsertOp(v T) table.Op { panic(0) }
func (s *S[T]) DeleteOps(ctx context.Context, pk, rk string, etag azcore.ETag) (table.Change, error) { panic(0) }
func (s *S[T]) RangePage(ctx context.Context, pk string, from, to time.Time, c table.Cursor, o *Options) (table.Page[table.Entity[T]], error) { panic(0) }
func (s *S[T]) Sweep(ctx context.Context, c *aztables.Client, o *Options) (Swept, error) { panic(0) }
func (s *S[T]) Run(ctx context.Context) error { panic(0) }
func (s *S[T]) Tally(ctx context.Context, pk string, n int) (table.Result, error) { panic(0) }
func (s *S[T]) TallyOps(ctx context.Context, pk string, n int) (table.Change, error) { panic(0) }

func (s *S[T]) Delete(ctx context.Context, pk, rk string) error { panic(0) }
func (s *S[T]) UpsertOp(ctx context.Context, v T) table.Op { panic(0) }
func (s *S[T]) Range(ctx context.Context, pk string, from time.Time, to string) iter.Seq2[table.Entity[T], error] { panic(0) }
func (s *S[T]) Modify(ctx context.Context, pk, rk string, fn func(*T) error, o *Options) (T, error) { panic(0) }
func (s *S[T]) Latest(ctx context.Context, n int, log string) ([]table.Entity[T], error) { panic(0) }
func (s *S[T]) FrobOp(v T) table.Op { panic(0) }
func (s *S[T]) TallyOp(ctx context.Context, pk string, n int) table.Op { panic(0) }
func (s *S[T]) Find(ctx context.Context, pk string, value int) iter.Seq2[table.Entity[T], error] { panic(0) }
func (s *S[T]) Lookup(ctx context.Context, pk, value string) (table.Entity[T], error) { panic(0) }
`)
	rotation := typeCheck(t, mod, "rotation", imports+`
func (s *S[T]) Insert(ctx context.Context, at time.Time, v T) (table.Result, error) { panic(0) }
`)
	bloblog := typeCheck(t, mod, "bloblog", imports+`
func (s *S[T]) Append(ctx context.Context, v T) (table.Result, error) { panic(0) }
`)
	out, used := deviations(mod.Path, []*types.Package{fake, rotation, bloblog})
	wanted := []string{
		"bloblog.(*S[T]).Append(context.Context, T) (table.Result, error): has the table's shape; remove its exception",
		"fake.(*S[T]).Delete(context.Context, string, string) error: want Delete(ctx, pk, rk, etag) error",
		"fake.(*S[T]).FrobOp(T) table.Op: no verb row for Frob and no method Frob beside it (add one, or rename the method)",
		"fake.(*S[T]).Latest(context.Context, int, string) ([]table.Entity[T], error): want Latest(ctx, scope..., n) ([]E, error)",
		"fake.(*S[T]).Modify(context.Context, string, string, func(*T) error, *Options) (T, error): want Modify(ctx, pk, rk, fn[, opts]) (E, error)",
		"fake.(*S[T]).Range(context.Context, string, time.Time, string) iter.Seq2[table.Entity[T], error]: want Range(ctx, scope..., from, to[, opts]) iter.Seq2[E, error]",
		"fake.(*S[T]).TallyOp(context.Context, string, int) table.Op: want TallyOp(string, int) Op",
		"fake.(*S[T]).UpsertOp(context.Context, T) table.Op: want UpsertOp(v[, mode]) Op",
		"the value of Lookup and Find has 2 types, want one: int in fake.Find; string in fake.Lookup",
	}
	if !slices.Equal(out, wanted) {
		t.Errorf("deviations:\n%s\nwant:\n%s", strings.Join(out, "\n"), strings.Join(wanted, "\n"))
	}
	for i := range exceptions {
		e := &exceptions[i]
		if want := e.pkg == "rotation" && e.method == "Insert" || e.pkg == "bloblog" && e.method == "Append"; used[e] != want {
			t.Errorf("exception %s.%s used %v, want %v", e.pkg, e.method, used[e], want)
		}
	}
}

// typeCheck type-checks src as the package patterns/name of the module.
func typeCheck(t *testing.T, mod *module, name, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name+".go", "package "+name+"\n"+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: mod.Importer}
	pkg, err := conf.Check(mod.Path+"/patterns/"+name, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}
