package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/patterns/largeentity"

	"github.com/tablekit/tablekit/internal/reserved"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// build compiles the program once per test.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "transfer")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runBin runs the program to its end and returns its exit status and
// output.
func runBin(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// killAfter runs the program with the test trigger that blocks it after
// n durable chunks, waits for it to block, and kills it with SIGKILL.
func killAfter(t *testing.T, bin string, n int, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", blockAfterEnv, n))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	sc.Split(scanCRLF)
	blocked := false
	for sc.Scan() {
		if sc.Text() == "blocked" {
			blocked = true
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup of any kind
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !blocked {
		t.Fatalf("%s %s ended without blocking", bin, strings.Join(args[:1], " "))
	}
}

// scanCRLF splits at \r and \n (the progress line is redrawn with \r).
func scanCRLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// TestKillAndResume exports a table with the program, kills it with
// SIGKILL after two chunks, resumes the export, imports it into a new
// table, kills the import likewise, resumes it, and verifies the
// restored table equals the source, then that verify reports a change.
func TestKillAndResume(t *testing.T) {
	env := tabletest.New(t)
	bin := build(t)
	ctx := context.Background()
	conn := env.ConnectionString
	srcName, dstName := env.Name(), env.Name()
	src := env.CreateTable(srcName, nil)
	env.CreateTable(dstName, nil) // deleted when the test ends; import creates it when missing
	srcTbl, err := table.New[table.Dynamic](src, nil)
	if err != nil {
		t.Fatal(err)
	}
	srcTbl = reserved.Table(srcTbl)
	var ops []table.Op
	for i := range 80 {
		ops = append(ops, srcTbl.UpsertOp(table.Dynamic{PartitionKey: fmt.Sprintf("p%d", i%4), RowKey: fmt.Sprintf("r%03d", i),
			Properties: map[string]any{"N": int64(i) << 40, "Body": strings.Repeat("x", 300), "When": time.Unix(int64(i), 0).UTC()}}, table.Replace))
	}
	ops = append(ops, srcTbl.UpsertOp(table.Dynamic{PartitionKey: "p0", RowKey: reserved.Prefix + "x", Properties: map[string]any{"TkRef": "r"}}, table.Replace))
	if _, err := srcTbl.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	ctr := env.Container(nil)
	ctrName := ctr.URL()[strings.LastIndex(ctr.URL(), "/")+1:]

	export := []string{"export", "-src", conn, "-src-table", srcName, "-blob", conn, "-container", ctrName, "-prefix", "b", "-chunk-kb", "4", "-ranges", "2", "-concurrency", "1"}
	killAfter(t, bin, 2, export...)
	if code, out := runBin(t, bin, export...); code != 1 || !strings.Contains(out, "exists") {
		t.Fatalf("export again without -resume: %d %s", code, out)
	}
	if code, out := runBin(t, bin, append(export, "-resume")...); code != 0 || !between(resumed(out, "export"), 1, 80) {
		t.Fatalf("export -resume: exit %d (it must export what the killed run did not)\n%s", code, out)
	}
	imp := []string{"import", "-blob", conn, "-container", ctrName, "-prefix", "b", "-dst", conn, "-dst-table", dstName, "-concurrency", "1"}
	killAfter(t, bin, 2, imp...)
	if code, out := runBin(t, bin, append(imp, "-resume")...); code != 0 || !between(resumed(out, "import"), 1, 80) {
		t.Fatalf("import -resume: exit %d (it must import what the killed run did not)\n%s", code, out)
	}
	if code, out := runBin(t, bin, "verify", "-src", conn, "-src-table", srcName, "-dst", conn, "-dst-table", dstName); code != 0 {
		t.Fatalf("verify tables: exit %d\n%s", code, out)
	}
	if code, out := runBin(t, bin, "verify", "-blob", conn, "-container", ctrName, "-prefix", "b", "-dst", conn, "-dst-table", dstName); code != 0 {
		t.Fatalf("verify export: exit %d\n%s", code, out)
	}
	if _, err := srcTbl.Upsert(ctx, table.Dynamic{PartitionKey: "p1", RowKey: "r001", Properties: map[string]any{"N": int64(0)}}, table.Replace); err != nil {
		t.Fatal(err)
	}
	code, out := runBin(t, bin, "verify", "-src", conn, "-src-table", srcName, "-dst", conn, "-dst-table", dstName)
	if code != 4 || !strings.Contains(out, `changed PartitionKey="p1" RowKey="r001"`) {
		t.Fatalf("verify after a change: exit %d\n%s", code, out)
	}
	if strings.Contains(out, emulator.DevAccount+";AccountKey") || strings.Contains(out, "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq") {
		t.Fatalf("output holds the account key:\n%s", out)
	}
}

// resumed returns the entity count of the summary line of verb in out,
// -1 when there is none.
func resumed(out, verb string) int {
	i := strings.Index(out, verb+": ")
	if i < 0 {
		return -1
	}
	var n int
	if _, err := fmt.Sscanf(out[i+len(verb)+2:], "%d entities", &n); err != nil {
		return -1
	}
	return n
}

func between(n, lo, hi int) bool { return lo <= n && n <= hi }

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{nil, {"nope"}, {"export"}, {"verify", "-dst", "x", "-dst-table", "t"},
		{"export", "-src", "x", "-src-tables", "a,b", "-src-table", "a", "-blob", "x", "-container", "c", "-prefix", "p"},
		{"export", "-src", "x", "-src-tables", "a,b", "-src-tables-prefix", "a", "-blob", "x", "-container", "c", "-prefix", "p"},
		{"import", "-set", "-blob", "x", "-container", "c", "-prefix", "p", "-dst", "x", "-dst-table", "t"},
		{"import", "-set", "-blob", "x", "-container", "c", "-prefix", "p", "-dst", "x", "-rename", "a"},
		{"import", "-blob", "x", "-container", "c", "-prefix", "p", "-dst", "x", "-dst-table", "t", "-rename", "a=b"},
		{"export", "-src", "x", "-src-tables", "a,b", "-blob", "x", "-container", "c", "-prefix", "p", "-queue", "x", "-queue-name", "q"}} {
		out.Reset()
		if code := run(context.Background(), args, &out, &out); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, out.String())
		}
	}
}

// TestSetProgram exports a set of tables (every table of a name prefix,
// as a rotation's periods are), killed with SIGKILL in its second table
// and resumed, imports it under other names, verifies the set, then
// finds a change in one of its tables.
func TestSetProgram(t *testing.T) {
	env := tabletest.New(t)
	bin := build(t)
	ctx := context.Background()
	conn := env.ConnectionString
	base, into := env.Prefix(), env.Prefix()
	names := []string{base + "a", base + "b", base + "c"}
	var renames []string
	for i, name := range names {
		tbl, err := table.New[table.Dynamic](env.CreateTable(name, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		var ops []table.Op
		for j := range 30 {
			ops = append(ops, tbl.UpsertOp(table.Dynamic{PartitionKey: fmt.Sprint("p", i), RowKey: fmt.Sprintf("r%03d", j),
				Properties: map[string]any{"Body": strings.Repeat("y", 300)}}, table.Replace))
		}
		if _, err := tbl.Submit(ctx, ops, nil); err != nil {
			t.Fatal(err)
		}
		renames = append(renames, strings.ToUpper(name)+"="+into+name[len(base):]) // names are case-insensitive
	}
	ctr := env.Container(nil)
	ctrName := ctr.URL()[strings.LastIndex(ctr.URL(), "/")+1:]

	export := []string{"export", "-src", conn, "-src-tables-prefix", base, "-blob", conn, "-container", ctrName, "-prefix", "set", "-chunk-kb", "4"}
	killAfter(t, bin, 4, export...) // 3 chunks a table: in the second
	code, out := runBin(t, bin, append(export, "-resume")...)
	if code != 0 || strings.Count(out, "export "+base) != 3 {
		t.Fatalf("export -resume: exit %d, want a summary per table\n%s", code, out)
	}
	imp := []string{"import", "-set", "-blob", conn, "-container", ctrName, "-prefix", "set", "-dst", conn, "-rename", strings.Join(renames, ",")}
	// A name the set does not hold would leave its table under its own
	// name (here: over the source): refused before anything is written.
	if code, out := runBin(t, bin, append(slices.Clone(imp[:len(imp)-1]), base+"x="+into+"x")...); code != 1 || !strings.Contains(out, "holds no table") {
		t.Fatalf("import -rename of a table the set does not hold: exit %d\n%s", code, out)
	}
	if code, out := runBin(t, bin, imp...); code != 0 || strings.Count(out, "import "+into) != 3 {
		t.Fatalf("import -set: exit %d\n%s", code, out)
	}
	verify := []string{"verify", "-set", "-blob", conn, "-container", ctrName, "-prefix", "set", "-dst", conn, "-rename", strings.Join(renames, ",")}
	if code, out := runBin(t, bin, verify...); code != 0 {
		t.Fatalf("verify -set: exit %d\n%s", code, out)
	}
	changed, err := table.New[table.Dynamic](env.TableClient(into+"b", nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := changed.Delete(ctx, "p1", "r007", "*"); err != nil {
		t.Fatal(err)
	}
	code, out = runBin(t, bin, verify...)
	if code != 4 || !strings.Contains(out, `missing PartitionKey="p1" RowKey="r007"`) || !strings.Contains(out, "table "+into+"b") {
		t.Fatalf("verify -set after a delete: exit %d\n%s", code, out)
	}
}

// TestSharedExport shares one export between three worker processes
// through a queue of ranges: the first is killed with SIGKILL after its
// first chunk, in the middle of its range; the two others, started
// after, finish every range, the dead one's once its lease expires. Then
// an import of that export and a copy of the table, each shared likewise.
func TestSharedExport(t *testing.T) {
	env := tabletest.New(t)
	bin := build(t)
	ctx := context.Background()
	conn := env.ConnectionString
	srcName := env.Name()
	src := env.CreateTable(srcName, nil)
	srcTbl, err := table.New[table.Dynamic](src, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ops []table.Op
	for i := range 90 {
		ops = append(ops, srcTbl.UpsertOp(table.Dynamic{PartitionKey: fmt.Sprintf("%c%d", 'a'+i%3, i%2), RowKey: fmt.Sprintf("r%03d", i),
			Properties: map[string]any{"Body": strings.Repeat("x", 300)}}, table.Replace))
	}
	if _, err := srcTbl.Submit(ctx, ops, nil); err != nil {
		t.Fatal(err)
	}
	name := func(u string) string { return u[strings.LastIndex(u, "/")+1:] }
	ctrName := name(env.Container(nil).URL())
	qName, poisonName := name(env.Queue(nil).URL()), name(env.Queue(nil).URL())
	common := []string{"-src", conn, "-src-table", srcName, "-blob", conn, "-container", ctrName, "-prefix", "shared",
		"-queue", conn, "-queue-name", qName, "-poison-name", poisonName, "-chunk-kb", "4"}
	if code, out := runBin(t, bin, append([]string{"export", "-ranges", "3"}, common...)...); code != 0 {
		t.Fatalf("export -queue: exit %d\n%s", code, out)
	}
	work := append([]string{"work", "-lease", "2s", "-concurrency", "1"}, common...)
	killAfter(t, bin, 1, work...)
	done := make(chan string, 2)
	for range 2 {
		go func() {
			cmd := exec.Command(bin, work...)
			out, err := cmd.CombinedOutput()
			done <- fmt.Sprintf("%v\n%s", err, out)
		}()
	}
	for range 2 {
		if out := <-done; !strings.HasPrefix(out, "<nil>") {
			t.Fatalf("work: %s", out)
		}
	}
	if code, out := runBin(t, bin, "verify", "-blob", conn, "-container", ctrName, "-prefix", "shared", "-dst", conn, "-dst-table", srcName); code != 0 {
		t.Fatalf("verify the shared export: exit %d\n%s", code, out)
	}

	// The export imported by three processes, one killed after its first
	// chunk; then import -resume finds nothing left.
	dstName := env.Name()
	env.CreateTable(dstName, nil)
	target := []string{"-blob", conn, "-container", ctrName, "-prefix", "shared", "-dst", conn, "-dst-table", dstName}
	queue := []string{"-queue", conn, "-queue-name", name(env.Queue(nil).URL()), "-poison-name", name(env.Queue(nil).URL())}
	shared := func(verb string, args ...string) {
		t.Helper()
		if code, out := runBin(t, bin, append([]string{verb}, args...)...); code != 0 {
			t.Fatalf("%s -queue: exit %d\n%s", verb, code, out)
		}
		work := append([]string{"work", "-lease", "2s", "-concurrency", "1"}, args...)
		killAfter(t, bin, 1, work...)
		for range 2 {
			go func() {
				out, err := exec.Command(bin, work...).CombinedOutput()
				done <- fmt.Sprintf("%v\n%s", err, out)
			}()
		}
		for range 2 {
			if out := <-done; !strings.HasPrefix(out, "<nil>") {
				t.Fatalf("work: %s", out)
			}
		}
	}
	shared("import", append(target, queue...)...)
	if code, out := runBin(t, bin, append([]string{"import", "-resume"}, target...)...); code != 0 || !strings.Contains(out, "import: 0 entities") {
		t.Fatalf("import -resume after the shared import: exit %d (nothing should be left)\n%s", code, out)
	}
	if code, out := runBin(t, bin, "verify", "-src", conn, "-src-table", srcName, "-dst", conn, "-dst-table", dstName); code != 0 {
		t.Fatalf("verify the shared import: exit %d\n%s", code, out)
	}

	// A copy shared likewise, one process killed after its first page.
	copyName := env.Name()
	env.CreateTable(copyName, nil)
	queue = []string{"-queue", conn, "-queue-name", name(env.Queue(nil).URL()), "-poison-name", name(env.Queue(nil).URL())}
	shared("copy", append([]string{"-src", conn, "-src-table", srcName, "-dst", conn, "-dst-table", copyName, "-ranges", "3"}, queue...)...)
	if code, out := runBin(t, bin, "verify", "-src", conn, "-src-table", srcName, "-dst", conn, "-dst-table", copyName); code != 0 {
		t.Fatalf("verify the shared copy: exit %d\n%s", code, out)
	}
}

// TestBlobsProgram exports a table of large entities with their photos
// (-src-blobs), imports it into another table and a new container
// (-dst-blobs: created), verifies both, and reads every photo back
// through the restored table's largeentity Store.
func TestBlobsProgram(t *testing.T) {
	env := tabletest.New(t)
	bin := build(t)
	ctx := context.Background()
	conn := env.ConnectionString
	srcName, dstName, photosName := env.Name(), env.Name(), env.Name()
	src := env.CreateTable(srcName, nil)
	env.CreateTable(dstName, nil)
	photos := env.Container(nil)
	srcPhotos := photos.URL()[strings.LastIndex(photos.URL(), "/")+1:]
	type employee struct {
		Dept  string `table:",pk"`
		ID    string `table:",rk"`
		Photo []byte `largeentity:"always"`
	}
	open := func(c *aztables.Client, ctr *container.Client) *largeentity.Store[employee] {
		tbl, err := table.New[table.Dynamic](c, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := largeentity.New[employee](tbl, ctr, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	staff := open(src, photos)
	for i := range 5 {
		if _, err := staff.Insert(ctx, employee{Dept: "d", ID: fmt.Sprint(i), Photo: bytes.Repeat([]byte{byte(i)}, 100_000)}); err != nil {
			t.Fatal(err)
		}
	}
	ctr := env.Container(nil)
	ctrName := ctr.URL()[strings.LastIndex(ctr.URL(), "/")+1:]
	export := []string{"export", "-src", conn, "-src-table", srcName, "-src-blobs", srcPhotos, "-blob", conn, "-container", ctrName, "-prefix", "b"}
	if code, out := runBin(t, bin, export...); code != 0 || !strings.Contains(out, "blobs: 5, 500000 bytes") {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	imp := []string{"import", "-blob", conn, "-container", ctrName, "-prefix", "b", "-dst", conn, "-dst-table", dstName, "-dst-blobs", photosName}
	if code, out := runBin(t, bin, imp...); code != 0 || !strings.Contains(out, "blobs: 5, 500000 bytes") {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"verify", "-src", conn, "-src-table", srcName, "-src-blobs", srcPhotos, "-dst", conn, "-dst-table", dstName, "-dst-blobs", photosName},
		{"verify", "-blob", conn, "-container", ctrName, "-prefix", "b", "-dst", conn, "-dst-table", dstName, "-dst-blobs", photosName},
	} {
		if code, out := runBin(t, bin, args...); code != 0 || !strings.Contains(out, "blobs: 5") {
			t.Fatalf("%s: exit %d\n%s", args[:2], code, out)
		}
	}
	restored := open(env.TableClient(dstName, nil), env.BlobService(nil).ServiceClient().NewContainerClient(photosName))
	for i := range 5 {
		e, err := restored.Get(ctx, "d", fmt.Sprint(i), nil)
		if err != nil || !bytes.Equal(e.Value.Photo, bytes.Repeat([]byte{byte(i)}, 100_000)) {
			t.Fatalf("restored employee %d: %v", i, err)
		}
	}
}
