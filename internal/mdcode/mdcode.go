// Package mdcode finds the Go code blocks of a Markdown file and makes each
// one a Go source file the go command can compile, so that a test can prove
// that every Go example of tablekit's README and docs/ pages compiles
// (docs_test.go here does, for README.md and docs/*.md).
//
// A block is a fenced code block (``` or ~~~) whose info string starts with
// the word go. [File] makes its source a Go file in one of three ways:
//
//   - a block that starts with a package clause (comments may come first)
//     is a complete file, compiled as it is: a program users can paste, or a
//     test file (a package whose name ends in _test);
//   - a block that parses as a file's declarations (imports, types,
//     functions, variables) is a file of package fragment;
//   - any other block is a list of statements: its leading import
//     declarations stay imports, and the rest is the body of a function with
//     one parameter, ctx context.Context. So a statement block may use ctx,
//     and must declare everything else it uses.
//
// Every file carries //line directives naming the Markdown file and the
// block's lines, so that compiler and vet messages point into the Markdown.
package mdcode

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// Kind says how a block becomes a Go file.
type Kind int

const (
	// Program is a block with a package clause: a complete file.
	Program Kind = iota
	// Declarations is a block of declarations without a package clause.
	Declarations
	// Statements is a block of statements, with optional leading imports.
	Statements
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Program:
		return "program"
	case Declarations:
		return "declarations"
	case Statements:
		return "statements"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Block is one Go code block of a Markdown file.
type Block struct {
	// Line is the line of the Markdown file (1-based) that holds the
	// block's first line of code, after the opening fence.
	Line int
	// Code is the block's content, each line ending in a newline, with the
	// indentation of its opening fence removed.
	Code string
}

// Blocks returns the Go code blocks of a Markdown document, in order: the
// fenced code blocks whose info string's first word is go (```go, ~~~go,
// ```go title). A block left open runs to the end of the document, as in
// CommonMark. Indented code blocks (four spaces, no fence) have no
// language and are not returned.
func Blocks(markdown []byte) []Block {
	var blocks []Block
	for _, f := range fences(markdown) {
		if word, _, _ := strings.Cut(f.info, " "); word != "go" {
			continue
		}
		var code strings.Builder
		for _, l := range f.content {
			code.WriteString(dedent(l, f.indent))
			code.WriteByte('\n')
		}
		blocks = append(blocks, Block{Line: f.first + 1, Code: code.String()})
	}
	return blocks
}

// Prose returns the document's lines outside fenced code blocks (fences
// included), with code spans (`...`) removed: the text whose links and
// words are the reader's, not code's.
func Prose(markdown []byte) string {
	lines := splitLines(markdown)
	fenced := make([]bool, len(lines))
	for _, f := range fences(markdown) {
		for i := f.first - 1; i <= f.last && i < len(lines); i++ {
			fenced[i] = true
		}
	}
	var out strings.Builder
	for i, l := range lines {
		if !fenced[i] {
			out.WriteString(codeSpan.ReplaceAllString(l, ""))
			out.WriteByte('\n')
		}
	}
	return out.String()
}

// codeSpan matches a code span: backticks, the code, backticks.
var codeSpan = regexp.MustCompile("`+[^`]*`+")

// fence is a fenced code block: its info string, the indentation of its
// opening fence, and its content lines, 0-based: first is the first
// content line (the opening fence is first-1), last the closing fence's
// (len(lines) when it is left open).
type fence struct {
	info        string
	indent      int
	first, last int
	content     []string
}

// fences returns the fenced code blocks of a document, in order.
func fences(markdown []byte) []fence {
	var (
		out []fence
		cur *fence
		run string // the opening fence's run of ` or ~
	)
	lines := splitLines(markdown)
	for i, text := range lines {
		trimmed := strings.TrimLeft(text, " \t")
		f := fenceRun(trimmed)
		if cur == nil {
			if f == "" {
				continue
			}
			info := strings.TrimSpace(trimmed[len(f):])
			if f[0] == '`' && strings.Contains(info, "`") {
				continue // not a fence: a code span starting a line
			}
			cur = &fence{info: info, indent: len(text) - len(trimmed), first: i + 1}
			run = f
			continue
		}
		if f != "" && f[0] == run[0] && len(f) >= len(run) && strings.TrimSpace(trimmed[len(f):]) == "" {
			cur.last = i
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.content = append(cur.content, text)
	}
	if cur != nil {
		cur.last = len(lines)
		out = append(out, *cur)
	}
	return out
}

// splitLines splits a document into lines without their line endings.
func splitLines(markdown []byte) []string {
	lines := strings.Split(string(markdown), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// fenceRun returns the run of three or more backticks or tildes that s
// starts with, or "".
func fenceRun(s string) string {
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}

// dedent removes up to n leading spaces or tabs from s.
func dedent(s string, n int) string {
	i := 0
	for i < n && i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}

// Classify says how b becomes a Go file, and for a Program, its package's
// name.
func Classify(b Block) (kind Kind, pkg string) {
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", b.Code, parser.PackageClauseOnly); err == nil {
		return Program, f.Name.Name
	}
	if _, err := parser.ParseFile(fset, "", "package fragment\n"+b.Code, parser.SkipObjectResolution); err == nil {
		return Declarations, "fragment"
	}
	return Statements, "fragment"
}

// File returns b as a Go source file, and the file's base name (main.go, or
// block_test.go for a package whose name ends in _test, which only a test
// build compiles). mdfile names the Markdown file in the //line
// directives; give a path the reader can open. The error is one of a
// statement block whose leading imports do not parse (a block that does
// not compile otherwise is left for the compiler to report, at its
// Markdown line).
func File(b Block, mdfile string) (name string, src []byte, err error) {
	kind, pkg := Classify(b)
	line := func(n int) string { return fmt.Sprintf("//line %s:%d\n", mdfile, n) }
	var out bytes.Buffer
	switch kind {
	case Program:
		name = "main.go"
		if strings.HasSuffix(pkg, "_test") {
			name = "block_test.go"
		}
		out.WriteString(line(b.Line))
		out.WriteString(b.Code)
	case Declarations:
		name = "fragment.go"
		out.WriteString("package fragment\n\n")
		out.WriteString(line(b.Line))
		out.WriteString(b.Code)
	case Statements:
		name = "fragment.go"
		imports, body, bodyLine, err := splitImports(b)
		if err != nil {
			return "", nil, fmt.Errorf("%s:%d: %v", mdfile, b.Line, err)
		}
		out.WriteString("package fragment\n\n")
		if !importsContext(imports) {
			out.WriteString("import \"context\"\n\n")
		}
		if imports != "" {
			out.WriteString(line(b.Line))
			out.WriteString(imports)
			out.WriteString("\n")
		}
		out.WriteString("//line mdcode-wrapper:1\nfunc _(ctx context.Context) {\n")
		out.WriteString(line(bodyLine))
		out.WriteString(body)
		out.WriteString("\n//line mdcode-wrapper:2\n}\n")
	}
	return name, out.Bytes(), nil
}

// splitImports cuts a statement block after its leading import
// declarations: the imports' text, the rest, and the Markdown line where
// the rest starts.
func splitImports(b Block) (imports, body string, bodyLine int, err error) {
	const head = "package fragment\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+b.Code, parser.ImportsOnly|parser.SkipObjectResolution)
	if err != nil {
		return "", "", 0, fmt.Errorf("the imports of a statement block: %v", err)
	}
	end := 0 // offset in b.Code after the last import declaration
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			end = fset.Position(g.End()).Offset - len(head)
		}
	}
	return b.Code[:end], b.Code[end:], b.Line + strings.Count(b.Code[:end], "\n"), nil
}

// importsContext reports whether import declarations import package context
// under its own name.
func importsContext(imports string) bool {
	if imports == "" {
		return false
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package fragment\n"+imports, parser.ImportsOnly)
	if err != nil {
		return false
	}
	for _, s := range f.Imports {
		if s.Path.Value == `"context"` && (s.Name == nil || s.Name.Name == "context") {
			return true
		}
	}
	return false
}
