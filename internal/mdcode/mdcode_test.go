package mdcode_test

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/mdcode"
)

func TestBlocks(t *testing.T) {
	md := strings.Join([]string{
		"# Title",                // 1
		"",                       // 2
		"```go",                  // 3
		"package main",           // 4
		"```",                    // 5
		"```sh",                  // 6
		"make test",              // 7
		"```",                    // 8
		"~~~~go title",           // 9
		"x := 1",                 // 10
		"~~~",                    // 11: too short to close
		"~~~~~",                  // 12: closes
		"```golang",              // 13: another language
		"y := 2",                 // 14
		"```",                    // 15
		"- item",                 // 16
		"",                       // 17
		"  ```go",                // 18: indented, in a list
		"  var z = 3",            // 19
		"    // deeper",          // 20
		"  ```",                  // 21
		"``` `go` is inline ```", // 22: not a fence
		"```go",                  // 23: left open
		"var w = 4",              // 24
	}, "\n")
	got := mdcode.Blocks([]byte(md))
	want := []mdcode.Block{
		{Line: 4, Code: "package main\n"},
		{Line: 10, Code: "x := 1\n~~~\n"},
		{Line: 19, Code: "var z = 3\n  // deeper\n"},
		{Line: 24, Code: "var w = 4\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("Blocks = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestProse(t *testing.T) {
	md := "See [a](a.md) and `[b](b.md)`.\n```go\nx := f[T](y)\n```\n~~~\n[c](c.md)\n~~~\nEnd [d](d.md).\n"
	want := "See [a](a.md) and .\nEnd [d](d.md).\n\n"
	if got := mdcode.Prose([]byte(md)); got != want {
		t.Errorf("Prose = %q, want %q", got, want)
	}
}

func TestFile(t *testing.T) {
	for _, c := range []struct {
		name, code string
		kind       mdcode.Kind
		file       string
		want       []string // substrings of the file, in order
	}{
		{"program", "// Comment.\npackage main\n\nfunc main() {}\n", mdcode.Program, "main.go",
			[]string{"//line README.md:7\n// Comment.\npackage main\n"}},
		{"test file", "package employees_test\n", mdcode.Program, "block_test.go",
			[]string{"//line README.md:7\npackage employees_test\n"}},
		{"declarations", "import \"fmt\"\n\nfunc f() { fmt.Println() }\n", mdcode.Declarations, "fragment.go",
			[]string{"package fragment\n", "//line README.md:7\nimport \"fmt\"\n"}},
		{"statements", "x := 1\n_ = x\n", mdcode.Statements, "fragment.go",
			[]string{"package fragment\n", "import \"context\"\n", "func _(ctx context.Context) {\n//line README.md:7\nx := 1\n"}},
		{"statements with imports", "import (\n\t\"context\"\n\t\"fmt\"\n)\n\nfmt.Println(ctx)\n", mdcode.Statements, "fragment.go",
			[]string{"package fragment\n", "//line README.md:7\nimport (\n", "func _(ctx context.Context) {\n//line README.md:10\n\n\nfmt.Println(ctx)\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := mdcode.Block{Line: 7, Code: c.code}
			if kind, _ := mdcode.Classify(b); kind != c.kind {
				t.Errorf("Classify = %v, want %v", kind, c.kind)
			}
			name, src, err := mdcode.File(b, "README.md")
			if err != nil {
				t.Fatal(err)
			}
			if name != c.file {
				t.Errorf("name = %q, want %q", name, c.file)
			}
			rest := string(src)
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("file lacks %q (in order):\n%s", w, src)
				}
				rest = rest[i+len(w):]
			}
			if strings.Contains(string(src), "context\"\n\t\"context") {
				t.Errorf("context imported twice:\n%s", src)
			}
			if _, err := parser.ParseFile(token.NewFileSet(), name, src, 0); err != nil {
				t.Errorf("the file does not parse: %v\n%s", err, src)
			}
		})
	}
}

// TestFileLines: a statement block's compile errors name the Markdown
// line, through the //line directives, on the lines before, in and after
// the imports.
func TestFileLines(t *testing.T) {
	b := mdcode.Block{Line: 20, Code: "import \"fmt\"\n\nfmt.Println(ctx)\nundefinedName()\n"}
	_, src, err := mdcode.File(b, "docs/x.md")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fragment.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range f.Unresolved {
		if u.Name == "undefinedName" {
			found = true
			if p := fset.Position(u.Pos()); p.Filename != "docs/x.md" || p.Line != 23 {
				t.Errorf("undefinedName at %v, want docs/x.md:23", p)
			}
		}
	}
	if !found {
		t.Fatalf("undefinedName not found in\n%s", src)
	}
}
