// Command apisnapshot records tablekit's exported API in api/tablekit.txt,
// in the spirit of the Go project's api/*.txt files, and checks the code
// against it. Every package of the module except examples/, internal/ and
// commands contributes one line per exported identifier, with its full
// signature (parameter names left out: renaming one changes no caller):
//
//	pkg github.com/tablekit/tablekit/keys, func Escape(string) string
//	pkg github.com/tablekit/tablekit/patterns/table, method (*Table[T]) Get(context.Context, string, string, *GetOptions) (Entity[T], error)
//	pkg github.com/tablekit/tablekit/patterns/table, type Entity[T any] struct, ETag azcore.ETag
//
// Lines are sorted, so the file changes only where the API does.
//
//	go run ./internal/cmd/apisnapshot         check: print what differs, exit 1
//	go run ./internal/cmd/apisnapshot -w      write api/tablekit.txt (make api)
//	go run ./internal/cmd/apisnapshot -count  exported identifiers per package
//
// make test runs the check (TestSnapshot). A change to the exported API
// updates the snapshot in the same commit and names the change in
// CHANGELOG.md (old -> new).
//
// The packages are read with go/types from the export data the go command
// builds (go list -export), so the command needs only the go command and
// the module cache.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// snapshotFile is the snapshot's path in the module.
const snapshotFile = "api/tablekit.txt"

// header opens the snapshot; lines starting with # are comments.
const header = `# tablekit's exported API: one line per exported identifier, struct field
# and interface method. Written by go run ./internal/cmd/apisnapshot -w
# (make api); make test fails when the code differs from it. Name every
# change in CHANGELOG.md.
`

func main() {
	write := flag.Bool("w", false, "write "+snapshotFile+" from the code")
	count := flag.Bool("count", false, "print the number of exported identifiers (types, funcs, methods, consts, vars; fields and interface methods not counted) per package and in total")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: apisnapshot [-w | -count]\n\nWithout flags, compares the exported API with %s and exits with status 1 when they differ.\n\n", snapshotFile)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *write && *count {
		flag.Usage()
		os.Exit(2)
	}
	mod, err := load(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "apisnapshot:", err)
		os.Exit(1)
	}
	path := filepath.Join(mod.Dir, snapshotFile)
	switch {
	case *count:
		printCounts(os.Stdout, mod)
	case *write:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "apisnapshot:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, []byte(format(snapshot(mod))), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "apisnapshot:", err)
			os.Exit(1)
		}
	default:
		report, err := check(mod, path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apisnapshot:", err)
			os.Exit(1)
		}
		if report != "" {
			fmt.Fprint(os.Stderr, report)
			os.Exit(1)
		}
	}
}

// module is the module's public packages, type-checked.
type module struct {
	Path string           // module path
	Dir  string           // module root
	Pkgs []*types.Package // public packages, by path
	// Importer reads the packages the module's packages import (and
	// theirs), from their export data.
	Importer types.Importer
}

// listed is what go list -json says about one package.
type listed struct {
	ImportPath string
	Name       string
	Export     string
	Standard   bool
	DepOnly    bool
	Error      *struct{ Err string }
}

// load type-checks the public packages of the module containing dir:
// every package of the module but commands and those under examples/ or
// internal/. It reads them, and what they import, from the export data
// go list -export builds.
func load(dir string) (*module, error) {
	out, err := goCmd(dir, "list", "-m", "-json=Path,Dir")
	if err != nil {
		return nil, err
	}
	mod := new(module)
	if err := json.Unmarshal(out, mod); err != nil {
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	out, err = goCmd(mod.Dir, "list", "-e", "-export", "-deps", "-json=ImportPath,Name,Export,Standard,DepOnly,Error", "./...")
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	var public []string
	var errs []error
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -export: %w", err)
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		exports[p.ImportPath] = p.Export
		if !p.Standard && !p.DepOnly && isPublic(mod.Path, p.ImportPath, p.Name) {
			public = append(public, p.ImportPath)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	mod.Importer = importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	slices.Sort(public)
	for _, path := range public {
		pkg, err := mod.Importer.Import(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		mod.Pkgs = append(mod.Pkgs, pkg)
	}
	return mod, nil
}

// isPublic reports whether the package path of module modPath is part of
// the API: not a command, not under examples/ or internal/.
func isPublic(modPath, path, name string) bool {
	rel, ok := strings.CutPrefix(path, modPath+"/")
	if !ok || name == "main" {
		return false
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "internal" || elem == "examples" {
			return false
		}
	}
	return true
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// snapshot returns the API's lines, sorted.
func snapshot(mod *module) []string {
	var lines []string
	for _, pkg := range mod.Pkgs {
		lines = append(lines, pkgLines(pkg)...)
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// format returns the snapshot file's text for lines.
func format(lines []string) string {
	return header + strings.Join(lines, "\n") + "\n"
}

// parse returns the API lines of a snapshot file's text.
func parse(text string) []string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return lines
}

// check compares the API with the snapshot at path and returns what
// differs, with what to do about it, or "" when they agree.
func check(mod *module, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	added, removed := diff(parse(string(data)), snapshot(mod))
	if len(added) == 0 && len(removed) == 0 {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the exported API differs from %s (%d added: +, %d removed: -):\n", snapshotFile, len(added), len(removed))
	for _, line := range removed {
		fmt.Fprintf(&b, "-%s\n", line)
	}
	for _, line := range added {
		fmt.Fprintf(&b, "+%s\n", line)
	}
	fmt.Fprintf(&b, "If the change is intended, run make api (go run ./internal/cmd/apisnapshot -w), commit %s, and name the change in CHANGELOG.md (old -> new).\n", snapshotFile)
	return b.String(), nil
}

// diff returns the lines of got missing from want (added) and those of
// want missing from got (removed); both inputs are sorted.
func diff(want, got []string) (added, removed []string) {
	for len(want) > 0 || len(got) > 0 {
		switch {
		case len(want) == 0 || len(got) > 0 && got[0] < want[0]:
			added, got = append(added, got[0]), got[1:]
		case len(got) == 0 || want[0] < got[0]:
			removed, want = append(removed, want[0]), want[1:]
		default:
			want, got = want[1:], got[1:]
		}
	}
	return added, removed
}

// pkgLines returns the API lines of one package.
func pkgLines(pkg *types.Package) []string {
	qf := qualifier(pkg)
	prefix := "pkg " + pkg.Path() + ", "
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, prefix+fmt.Sprintf(format, args...))
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, typeString(obj.Type(), qf), obj.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, typeString(obj.Type(), qf))
		case *types.Func:
			add("func %s%s", name, signature(obj.Type().(*types.Signature), qf))
		case *types.TypeName:
			for _, line := range typeLines(obj, qf) {
				add("%s", line)
			}
		}
	}
	return lines
}

// typeLines returns the lines of an exported type: the type, its exported
// fields or interface methods, and its exported methods.
func typeLines(obj *types.TypeName, qf types.Qualifier) []string {
	name := obj.Name()
	if obj.IsAlias() {
		return []string{fmt.Sprintf("type %s = %s", name, typeString(types.Unalias(obj.Type()), qf))}
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return []string{fmt.Sprintf("type %s %s", name, typeString(obj.Type().Underlying(), qf))}
	}
	decl := name + typeParams(named.TypeParams(), qf)
	var lines []string
	switch u := named.Underlying().(type) {
	case *types.Struct:
		lines = append(lines, "type "+decl+" struct")
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded():
				lines = append(lines, fmt.Sprintf("type %s struct, embedded %s", decl, typeString(f.Type(), qf)))
			case f.Exported():
				lines = append(lines, fmt.Sprintf("type %s struct, %s %s", decl, f.Name(), typeString(f.Type(), qf)))
			}
		}
	case *types.Interface:
		var names []string
		for i := range u.NumExplicitMethods() {
			m := u.ExplicitMethod(i)
			if m.Exported() {
				names = append(names, m.Name())
				lines = append(lines, fmt.Sprintf("type %s interface, %s%s", decl, m.Name(), signature(m.Type().(*types.Signature), qf)))
			} else {
				names = append(names, "unexported methods")
			}
		}
		for i := range u.NumEmbeddeds() {
			e := typeString(u.EmbeddedType(i), qf)
			names = append(names, e)
			lines = append(lines, fmt.Sprintf("type %s interface, embedded %s", decl, e))
		}
		slices.Sort(names)
		lines = append(lines, fmt.Sprintf("type %s interface { %s }", decl, strings.Join(slices.Compact(names), ", ")))
	default:
		lines = append(lines, fmt.Sprintf("type %s %s", decl, typeString(u, qf)))
	}
	for i := range named.NumMethods() {
		m := named.Method(i)
		if !m.Exported() {
			continue
		}
		sig := m.Type().(*types.Signature)
		lines = append(lines, fmt.Sprintf("method (%s) %s%s", receiver(sig, qf), m.Name(), signature(sig, qf)))
	}
	return lines
}

// receiver returns a method's receiver type as written: T, *T, *T[K, V].
func receiver(sig *types.Signature, qf types.Qualifier) string {
	t := sig.Recv().Type()
	star := ""
	if p, ok := t.(*types.Pointer); ok {
		star, t = "*", p.Elem()
	}
	name := t.(*types.Named).Obj().Name()
	if tps := sig.RecvTypeParams(); tps.Len() > 0 {
		var args []string
		for i := range tps.Len() {
			args = append(args, tps.At(i).Obj().Name())
		}
		name += "[" + strings.Join(args, ", ") + "]"
	}
	return star + name
}

// signature returns a function's type parameters, parameter types and
// result types, without names: [T any](context.Context, string) (T, error).
func signature(sig *types.Signature, qf types.Qualifier) string {
	s := typeParams(sig.TypeParams(), qf) + "(" + tupleTypes(sig.Params(), sig.Variadic(), qf) + ")"
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		s += " " + typeString(res.At(0).Type(), qf)
	default:
		s += " (" + tupleTypes(res, false, qf) + ")"
	}
	return s
}

// tupleTypes returns the types of a parameter or result list.
func tupleTypes(t *types.Tuple, variadic bool, qf types.Qualifier) string {
	var parts []string
	for i := range t.Len() {
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			parts = append(parts, "..."+typeString(typ.(*types.Slice).Elem(), qf))
			continue
		}
		parts = append(parts, typeString(typ, qf))
	}
	return strings.Join(parts, ", ")
}

// typeParams returns a type parameter list with constraints: [K comparable, V any].
func typeParams(tps *types.TypeParamList, qf types.Qualifier) string {
	if tps.Len() == 0 {
		return ""
	}
	var parts []string
	for i := range tps.Len() {
		tp := tps.At(i)
		parts = append(parts, tp.Obj().Name()+" "+typeString(tp.Constraint(), qf))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// typeString returns t as written in Go, with package names as qf gives
// them, and without the parameter names of function types (renaming a
// parameter changes no caller).
func typeString(t types.Type, qf types.Qualifier) string {
	switch t := t.(type) {
	case *types.Signature:
		return "func" + signature(t, qf)
	case *types.Pointer:
		return "*" + typeString(t.Elem(), qf)
	case *types.Slice:
		return "[]" + typeString(t.Elem(), qf)
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), typeString(t.Elem(), qf))
	case *types.Map:
		return "map[" + typeString(t.Key(), qf) + "]" + typeString(t.Elem(), qf)
	case *types.Chan:
		prefix := map[types.ChanDir]string{types.SendRecv: "chan ", types.SendOnly: "chan<- ", types.RecvOnly: "<-chan "}[t.Dir()]
		return prefix + typeString(t.Elem(), qf)
	case *types.Named:
		return qualified(t.Obj(), qf) + typeArgs(t.TypeArgs(), qf)
	case *types.Alias:
		return qualified(t.Obj(), qf) + typeArgs(t.TypeArgs(), qf)
	}
	return types.TypeString(t, qf)
}

// qualified returns a type's name, qualified as qf says.
func qualified(obj *types.TypeName, qf types.Qualifier) string {
	if obj.Pkg() != nil {
		if q := qf(obj.Pkg()); q != "" {
			return q + "." + obj.Name()
		}
	}
	return obj.Name()
}

// typeArgs returns an instantiated type's arguments: [K, V].
func typeArgs(args *types.TypeList, qf types.Qualifier) string {
	if args.Len() == 0 {
		return ""
	}
	var parts []string
	for i := range args.Len() {
		parts = append(parts, typeString(args.At(i), qf))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// qualifier names other packages by their package name (table.Result,
// azcore.ETag) and the package's own identifiers unqualified.
func qualifier(pkg *types.Package) types.Qualifier {
	return func(other *types.Package) string {
		if other == pkg {
			return ""
		}
		return other.Name()
	}
}

// counts is the number of a package's exported identifiers of each kind.
type counts struct {
	Types, Funcs, Methods, Consts, Vars int
}

// Total is the number of exported identifiers: fields and interface
// methods are not counted.
func (c counts) Total() int { return c.Types + c.Funcs + c.Methods + c.Consts + c.Vars }

// count returns the exported identifiers of pkg by kind: its exported
// types, functions, constants and variables, and the exported methods
// declared on its exported types.
func count(pkg *types.Package) counts {
	var c counts
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			c.Consts++
		case *types.Var:
			c.Vars++
		case *types.Func:
			c.Funcs++
		case *types.TypeName:
			c.Types++
			if named, ok := obj.Type().(*types.Named); ok && !obj.IsAlias() {
				for i := range named.NumMethods() {
					if named.Method(i).Exported() {
						c.Methods++
					}
				}
			}
		}
	}
	return c
}

// printCounts prints each package's exported identifiers by kind and the
// module's total.
func printCounts(w io.Writer, mod *module) {
	var total counts
	fmt.Fprintf(w, "%-28s %5s %5s %5s %7s %6s %4s\n", "package", "total", "types", "funcs", "methods", "consts", "vars")
	for _, pkg := range mod.Pkgs {
		c := count(pkg)
		total.Types += c.Types
		total.Funcs += c.Funcs
		total.Methods += c.Methods
		total.Consts += c.Consts
		total.Vars += c.Vars
		fmt.Fprintf(w, "%-28s %5d %5d %5d %7d %6d %4d\n", strings.TrimPrefix(pkg.Path(), mod.Path+"/"), c.Total(), c.Types, c.Funcs, c.Methods, c.Consts, c.Vars)
	}
	fmt.Fprintf(w, "%-28s %5d %5d %5d %7d %6d %4d\n", "total", total.Total(), total.Types, total.Funcs, total.Methods, total.Consts, total.Vars)
}
