package emulator

import (
	"fmt"
	"strings"
	"testing"
)

// outputTail splits lines across writes of any size, cuts long lines, keeps
// the last tailLines lines and the unfinished one.
func TestOutputTail(t *testing.T) {
	var seen []string
	o := &outputTail{onLine: func(l string) { seen = append(seen, l) }}
	var all strings.Builder
	all.WriteString(strings.Repeat("é", 3*maxLineBytes) + "\r\n")
	for i := range tailLines + 5 {
		fmt.Fprintf(&all, "line %d\r\n", i)
	}
	all.WriteString("unfinished")
	data := all.String()
	for len(data) > 0 { // writes of 1, 2, 3, ... bytes
		n := min(len(seen)%7+1, len(data))
		if _, err := o.Write([]byte(data[:n])); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}

	if len(seen) != tailLines+6 {
		t.Fatalf("onLine saw %d lines, want %d", len(seen), tailLines+6)
	}
	long := seen[0]
	if !strings.HasPrefix(long, "éé") || !strings.HasSuffix(long, fmt.Sprintf("... [%d more bytes]", 5*maxLineBytes)) || len(long) > maxLineBytes+40 {
		t.Fatalf("long line kept as %q...", long[:40])
	}
	var want []string
	for i := 5; i < tailLines+5; i++ {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	want = append(want, "unfinished")
	if got := o.String(); got != strings.Join(want, "\n") {
		t.Fatalf("String() = %q, want %q", got, strings.Join(want, "\n"))
	}
}
