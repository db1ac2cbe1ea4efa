package mdcode_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/mdcode"
)

// root is the module's root, from this package's directory.
const root = "../.."

// docs returns tablekit's Markdown pages whose Go blocks must compile: the
// README and docs/*.md, as paths from the module's root.
func docs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md pages found")
	}
	files := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// TestDocsCompile compiles every Go block of the README and of docs/*.md
// (see the package doc for how a block becomes a file), and checks that
// each is gofmt-formatted.
func TestDocsCompile(t *testing.T) {
	files := docs(t)
	blocks := 0
	for _, file := range files {
		md, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range mdcode.Blocks(md) {
			blocks++
			if formatted, err := format.Source([]byte(b.Code)); err == nil && !bytes.Equal(formatted, []byte(b.Code)) {
				t.Errorf("%s:%d: the Go block is not gofmt-formatted; gofmt gives:\n%s", file, b.Line, formatted)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go blocks found in the README and docs/")
	}
	if out, err := compile(t, files); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

// TestCompileKinds compiles a block of each kind (testdata/kinds.md), so
// that every way File makes a file is proven with the go command.
func TestCompileKinds(t *testing.T) {
	if out, err := compile(t, []string{"internal/mdcode/testdata/kinds.md"}); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

// TestCompileBroken: a block that does not compile fails the check, with an
// error at its Markdown line, for every kind of block (testdata/broken.md:
// each block uses an undefined name on the line that the comment before
// the block gives; the last is also a package main without func main).
func TestCompileBroken(t *testing.T) {
	const file = "internal/mdcode/testdata/broken.md"
	md, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^<!-- undefined at line (\d+) -->$`).FindAllStringSubmatch(string(md), -1)
	if len(want) != len(mdcode.Blocks(md)) {
		t.Fatalf("%s: %d blocks but %d comments saying where each fails", file, len(mdcode.Blocks(md)), len(want))
	}
	out, err := compile(t, []string{file})
	if err == nil {
		t.Fatalf("the broken blocks compiled:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, "broken.md:"+w[1]+": undefined") {
			t.Errorf("no error at broken.md:%s in:\n%s", w[1], out)
		}
	}
	if !strings.Contains(out, "broken.md:51: package main has no func main") {
		t.Errorf("the program without func main (broken.md:51) not reported in:\n%s", out)
	}
}

// compile writes the Go blocks of Markdown files (paths from the module's
// root) as packages in a temporary directory inside this package, so that
// they build within the module (its go.mod and go.sum; the directory's
// name starts with _, which ./... patterns never match), and runs go vet on
// them all: it type-checks every block, test files included, as the
// compiler does, and vets it. (Linking the programs would cost seconds
// each and find only a missing func main, which compile checks itself.)
// It returns the go command's output, and an error when a block does not
// compile.
func compile(t *testing.T, files []string) (string, error) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to compile Go blocks: %v", err)
	}
	tmp, err := os.MkdirTemp(".", "_blocks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	var pkgs, noMain []string
	for _, file := range files {
		path := filepath.Join(root, file)
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range mdcode.Blocks(md) {
			name, src, err := mdcode.File(b, abs)
			if err != nil {
				return "", err
			}
			dir := "./" + filepath.ToSlash(filepath.Join(tmp, fmt.Sprintf("b%03d", len(pkgs))))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
				t.Fatal(err)
			}
			pkgs = append(pkgs, dir)
			if kind, pkg := mdcode.Classify(b); kind == mdcode.Program && pkg == "main" && !hasMain(b.Code) {
				noMain = append(noMain, fmt.Sprintf("%s:%d: package main has no func main", file, b.Line))
			}
		}
	}
	if len(pkgs) == 0 {
		return "", nil
	}
	out, err := exec.Command(goCmd, append([]string{"vet"}, pkgs...)...).CombinedOutput()
	report := string(out) + strings.Join(noMain, "\n")
	switch {
	case err != nil:
		return report, fmt.Errorf("go vet: %v", err)
	case noMain != nil:
		return report, fmt.Errorf("%d programs without func main", len(noMain))
	}
	return report, nil
}

// hasMain reports whether a program declares func main.
func hasMain(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", code, parser.SkipObjectResolution)
	if err != nil {
		return true // the compiler reports it
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			return true
		}
	}
	return false
}

// TestREADMEFrontDoor checks what issue 32 asks of the README: under 2,000
// words, Go code within its first 60 lines, no line longer than 200
// characters, and a Contributing section with the two commands.
func TestREADMEFrontDoor(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(md))); n >= 2000 {
		t.Errorf("README.md has %d words (wc -w), want under 2,000: move explanations to docs/ or the package docs", n)
	}
	blocks := mdcode.Blocks(md)
	if len(blocks) == 0 || blocks[0].Line > 60 {
		t.Errorf("README.md's first Go code is not within its first 60 lines")
	} else if kind, pkg := mdcode.Classify(blocks[0]); kind != mdcode.Program || pkg != "main" {
		t.Errorf("README.md:%d: the first Go block is not a complete program (package main)", blocks[0].Line)
	}
	lines := strings.Split(string(md), "\n")
	for i, l := range lines {
		if n := len([]rune(l)); n > 200 {
			t.Errorf("README.md:%d is %d characters long, want at most 200", i+1, n)
		}
	}
	contributing := regexp.MustCompile(`(?m)^## Contributing\n`).FindIndex(md)
	if contributing == nil {
		t.Fatal(`README.md has no "## Contributing" section`)
	}
	section := string(md[contributing[1]:])
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	for _, cmd := range []string{"make demo", "make test"} {
		if !regexp.MustCompile(`(?m)^` + cmd + `\b`).MatchString(section) {
			t.Errorf("README.md's Contributing section lacks a line starting with %q", cmd)
		}
	}
}

// link matches a Markdown link or image target: [text](target) and
// reference definitions, [ref]: target.
var link = regexp.MustCompile(`\]\(([^)\s]+)[^)]*\)|(?m)^\[[^\]]+\]:\s*(\S+)`)

// TestDocsLinks checks that every relative link of the README and docs/*.md
// names a file or directory of the repository.
func TestDocsLinks(t *testing.T) {
	for _, file := range docs(t) {
		md, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(mdcode.Prose(md), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Join(root, filepath.Dir(file), filepath.FromSlash(target))
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: the link %q names no file (%v)", file, m[0], err)
			}
		}
	}
}
