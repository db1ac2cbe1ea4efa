// Command transfer exports a table to blobs, imports an export into a
// table, copies a table to another (across accounts and between Azure
// Table Storage and the Cosmos DB Table API), and verifies that two tables,
// or an export and a table, are equal: package patterns/transfer as an
// operator's program.
//
//	go run ./examples/transfer export -src "$CONN" -src-table orders -blob "$CONN" -container backups -prefix orders/2026-11-29
//	go run ./examples/transfer import -blob "$CONN" -container backups -prefix orders/2026-11-29 -dst "$CONN2" -dst-table orders
//	go run ./examples/transfer copy   -src "$CONN" -src-table orders -dst "$COSMOS" -dst-table orders -ranges 8
//	go run ./examples/transfer verify -src "$CONN" -src-table orders -dst "$COSMOS" -dst-table orders
//	go run ./examples/transfer verify -blob "$CONN" -container backups -prefix orders/2026-11-29 -dst "$CONN2" -dst-table orders
//
// An export, import or copy that several machines share: the verb with
// -queue splits the work into ranges and queues them (an Azure queue, and
// a poison queue beside it: -ranges ranges of the table for an export or
// a copy, the export's ranges for an import); then each machine runs work
// with the same flags until the queue is empty. A machine that dies
// mid-range stops renewing its lease (-lease) and another continues the
// range. After a shared import, import -resume writes what is left and
// reports the whole (rejects included); a shared copy's ranges that hold
// entities the target cannot hold end in the poison queue, which work
// reports (exit status 3).
//
//	go run ./examples/transfer export -src "$CONN" -src-table orders -blob "$CONN" -container backups -prefix p -queue "$CONN" -queue-name orders-export -ranges 64
//	go run ./examples/transfer work   -src "$CONN" -src-table orders -blob "$CONN" -container backups -prefix p -queue "$CONN" -queue-name orders-export
//	go run ./examples/transfer import -blob "$CONN" -container backups -prefix p -dst "$CONN2" -dst-table orders -queue "$CONN2" -queue-name orders-import
//	go run ./examples/transfer work   -blob "$CONN" -container backups -prefix p -dst "$CONN2" -dst-table orders -queue "$CONN2" -queue-name orders-import
//
// -src, -dst and -blob take a connection string, or a service URL
// (https://account.table.core.windows.net/, https://account.blob.core.windows.net/,
// https://account.table.cosmos.azure.com/) to reach with Microsoft Entra
// ID through azidentity's DefaultAzureCredential (environment, workload
// identity, managed identity, Azure CLI). An interrupted export or import
// continues with -resume; a copy is run again (it writes upserts).
//
// A table whose rows keep large values in blobs (patterns/largeentity,
// or a secondaryindex with Options.Large) is exported, imported, copied
// and verified with them: -src-blobs names the container of the source
// table's blobs, -dst-blobs that of the target's. Each is in
// -src-blobs-account or -dst-blobs-account, by default in the table's
// account when -src or -dst is a connection string, else in -blob's.
// A Store with a Prefix other than its table's name takes
// -src-blobs-prefix or -dst-blobs-prefix.
//
//	go run ./examples/transfer export -src "$CONN" -src-table staff -src-blobs photos -blob "$CONN" -container backups -prefix staff/1
//	go run ./examples/transfer import -blob "$CONN" -container backups -prefix staff/1 -dst "$CONN2" -dst-table staff -dst-blobs photos -dst-blobs-account "$CONN2"
//
// Tables that belong together (a rotation's periods, an index table
// beside its primary) are exported as one set with -src-tables (a list)
// or -src-tables-prefix (every table whose name starts with it: a
// rotation's prefix names its periods), each table under
// <prefix>/<name>; import -set and verify -set take the whole set, into
// tables of the same names or of the names -rename gives
// (old=new,old2=new2: each old name must be one of the set's), and
// import creates them. A set is exported by one process; export -resume
// continues the set its list names.
//
//	go run ./examples/transfer export -src "$CONN" -src-tables-prefix logins -blob "$CONN" -container backups -prefix logins/2026-11-29
//	go run ./examples/transfer import -set -blob "$CONN" -container backups -prefix logins/2026-11-29 -dst "$CONN2"
//
// A progress line (entities, MB, rate, ETA) goes to standard error, a
// summary to standard output. Exit status: 0 done; 1 failed; 2 usage;
// 3 some entities rejected by the target (listed); 4 verify found
// differences (listed).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"

	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/transfer"
)

// blockAfterEnv is for the program's own tests only: after that many
// progress reports (each after a chunk or page is durable) the program
// says "blocked" on standard error and waits to be killed, so a test can
// kill -9 it at a known point.
const blockAfterEnv = "TABLEKIT_TRANSFER_TEST_BLOCK_AFTER"

const usage = `usage: transfer export|import|copy|verify|work [flags]
run "transfer <verb> -h" for a verb's flags`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the command line.
type config struct {
	verb                    string
	src, srcTable           string
	dst, dstTable           string
	blob, container, prefix string
	opts                    transfer.Options
	since                   string
	chunkKB                 int
	queue, queueName        string
	poisonName              string
	lease                   time.Duration
	// The containers of the tables' large-entity blobs: account,
	// container and Store Prefix of the source's and of the target's.
	srcBlobs, dstBlobs [3]string
	// A set of tables: the tables exported (a list, or a prefix of their
	// names); -set for an import or verify of one, and its renames.
	srcTables, srcTablesPrefix string
	set                        bool
	rename                     string
}

func parse(args []string, stderr io.Writer) (*config, error) {
	if len(args) == 0 {
		return nil, errors.New(usage)
	}
	c := &config{verb: args[0]}
	fs := flag.NewFlagSet("transfer "+c.verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.src, "src", "", "source table account: connection string or table service URL")
	fs.StringVar(&c.srcTable, "src-table", "", "source table")
	fs.StringVar(&c.dst, "dst", "", "target table account: connection string or table service URL")
	fs.StringVar(&c.dstTable, "dst-table", "", "target table (created if missing)")
	fs.StringVar(&c.srcTables, "src-tables", "", "export: the tables of a set, comma-separated (instead of -src-table)")
	fs.StringVar(&c.srcTablesPrefix, "src-tables-prefix", "", "export: a set of every table whose name starts with this (a rotation's periods)")
	fs.BoolVar(&c.set, "set", false, "import, verify: the export at -prefix is a set of tables (instead of -dst-table)")
	fs.StringVar(&c.rename, "rename", "", "import, verify -set: target names, old=new,old2=new2 (default: the same names)")
	fs.StringVar(&c.blob, "blob", "", "blob account of the export: connection string or blob service URL")
	fs.StringVar(&c.container, "container", "", "container of the export (created if missing)")
	fs.StringVar(&c.prefix, "prefix", "", "blob name prefix of the export")
	fs.StringVar(&c.opts.From, "from", "", "lowest PartitionKey (inclusive)")
	fs.StringVar(&c.opts.To, "to", "", "PartitionKey bound (exclusive)")
	fs.StringVar(&c.since, "since", "", "export only entities with Timestamp at or after this RFC 3339 time (Table Storage)")
	fs.IntVar(&c.opts.Ranges, "ranges", 1, "PartitionKey ranges read in parallel")
	fs.IntVar(&c.opts.Concurrency, "concurrency", 4, "ranges read, and transactions sent, at once")
	fs.IntVar(&c.chunkKB, "chunk-kb", 8<<10, "uncompressed KiB per export chunk")
	fs.BoolVar(&c.opts.Resume, "resume", false, "continue an interrupted export or import")
	fs.StringVar(&c.queue, "queue", "", "queue account of a shared export: connection string or queue service URL")
	fs.StringVar(&c.queueName, "queue-name", "", "queue of a shared export's ranges (created if missing)")
	fs.StringVar(&c.poisonName, "poison-name", "", "poison queue of a shared export (default: the queue's name + \"-poison\")")
	fs.DurationVar(&c.lease, "lease", 30*time.Second, "work: lease on a range, renewed while it is exported")
	for _, side := range []struct {
		name, table string
		v           *[3]string
	}{{"src", "source", &c.srcBlobs}, {"dst", "target", &c.dstBlobs}} {
		fs.StringVar(&side.v[1], side.name+"-blobs", "", "container of the "+side.table+" table's large-entity blobs (patterns/largeentity): carried with the rows that point at them")
		fs.StringVar(&side.v[0], side.name+"-blobs-account", "", "blob account of -"+side.name+"-blobs (default: -"+side.name+"'s when a connection string, else -blob's)")
		fs.StringVar(&side.v[2], side.name+"-blobs-prefix", "", "the "+side.table+" Store's Prefix (default: the "+side.table+" table's name)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	c.opts.ChunkBytes = c.chunkKB << 10
	if c.since != "" {
		t, err := time.Parse(time.RFC3339Nano, c.since)
		if err != nil {
			return nil, fmt.Errorf("-since: %v", err)
		}
		c.opts.Since = t
	}
	sets := c.srcTables != "" || c.srcTablesPrefix != "" || c.set
	switch {
	case c.srcTables != "" && c.srcTablesPrefix != "":
		return nil, errors.New("transfer: -src-tables and -src-tables-prefix: give one")
	case (c.srcTables != "" || c.srcTablesPrefix != "") && (c.verb != "export" || c.srcTable != ""):
		return nil, errors.New("transfer: -src-tables and -src-tables-prefix go with export, instead of -src-table")
	case c.set && (c.verb != "import" && c.verb != "verify" || c.dstTable != "" || c.blob == ""):
		return nil, errors.New("transfer: -set goes with import or verify of an export (-blob, -container, -prefix), instead of -dst-table")
	case c.rename != "" && !c.set:
		return nil, errors.New("transfer: -rename goes with -set")
	case sets && c.queue != "":
		return nil, errors.New("transfer: a set of tables is transferred by one process: -queue takes one table")
	}
	if _, err := parseRenames(c.rename, nil); err != nil {
		return nil, err
	}
	need := map[string][]string{
		"export": {"src", "src-table", "blob", "container", "prefix"},
		"import": {"blob", "container", "prefix", "dst", "dst-table"},
		"copy":   {"src", "src-table", "dst", "dst-table"},
		"verify": {"dst", "dst-table"},
		"work":   {"queue", "queue-name"},
	}[c.verb]
	if need == nil {
		return nil, errors.New(usage)
	}
	for _, name := range need {
		if sets && (name == "src-table" || name == "dst-table") {
			continue
		}
		if fs.Lookup(name).Value.String() == "" {
			return nil, fmt.Errorf("transfer %s: -%s is required", c.verb, name)
		}
	}
	if (c.queue == "") != (c.queueName == "") {
		return nil, errors.New("transfer: -queue and -queue-name go together")
	}
	if c.poisonName == "" {
		c.poisonName = c.queueName + "-poison"
	}
	if c.verb == "verify" && (c.src == "") == (c.blob == "") {
		return nil, errors.New("transfer verify: give -src and -src-table, or -blob, -container and -prefix")
	}
	return c, nil
}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	bar := &progressBar{w: stderr}
	c.opts.Progress = bar.report
	if n, err := strconv.Atoi(os.Getenv(blockAfterEnv)); err == nil && n > 0 {
		reports := 0
		c.opts.Progress = func(p transfer.Progress) {
			bar.report(p)
			if reports++; reports == n {
				fmt.Fprint(stderr, "\nblocked\n")
				select {} // until killed
			}
		}
	}
	sums, err := c.do(ctx)
	bar.done()
	for _, sum := range sums {
		printSummary(stdout, c.verb, sum)
	}
	switch {
	case errors.Is(err, transfer.ErrRejected):
		fmt.Fprintln(stderr, redact.Text(err.Error()))
		return 3
	case errors.Is(err, transfer.ErrMismatch):
		fmt.Fprintln(stderr, redact.Text(err.Error()))
		return 4
	case err != nil:
		fmt.Fprintln(stderr, redact.Text(err.Error()))
		return 1
	}
	return 0
}

// do runs the command: a Summary per table.
func (c *config) do(ctx context.Context) ([]transfer.Summary, error) {
	if c.srcTables != "" || c.srcTablesPrefix != "" || c.set {
		return c.doSet(ctx)
	}
	sum, err := c.doOne(ctx)
	return []transfer.Summary{sum}, err
}

// doSet runs an export, import or verify of a set of tables.
func (c *config) doSet(ctx context.Context) ([]transfer.Summary, error) {
	blobs, err := containerClient(c.blob, c.container)
	if err != nil {
		return nil, err
	}
	if c.verb == "export" {
		if c.opts.Blobs, err = c.largeBlobs(c.srcBlobs, c.src); err != nil {
			return nil, err
		}
		svc, err := tableService(c.src)
		if err != nil {
			return nil, err
		}
		if _, err := blobs.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return nil, fmt.Errorf("creating container %s: %w", c.container, redact.Error(err))
		}
		tables, err := c.setTables(ctx, svc, blobs) // with -resume, reads the set's list
		if err != nil {
			return nil, err
		}
		return transfer.ExportTables(ctx, svc, tables, blobs, c.prefix, &c.opts)
	}
	if c.opts.TargetBlobs, err = c.largeBlobs(c.dstBlobs, c.dst); err != nil {
		return nil, err
	}
	svc, err := tableService(c.dst)
	if err != nil {
		return nil, err
	}
	if c.rename != "" {
		exported, err := transfer.ExportedTables(ctx, blobs, c.prefix)
		if err != nil {
			return nil, err
		}
		renames, err := parseRenames(c.rename, exported)
		if err != nil {
			return nil, err
		}
		c.opts.Rename = func(name string) string {
			if to, ok := renames[strings.ToLower(name)]; ok {
				return to
			}
			return name
		}
	}
	if c.verb == "verify" {
		return transfer.VerifyExportTables(ctx, blobs, c.prefix, svc, &c.opts)
	}
	if err := c.createBlobTarget(ctx); err != nil {
		return nil, err
	}
	return transfer.ImportTables(ctx, blobs, c.prefix, svc, &c.opts)
}

// setTables returns the tables of -src-tables, or those whose names start
// with -src-tables-prefix (at least one); with -resume, those of the set
// already at -prefix, when there is one (tables created since are not
// its).
func (c *config) setTables(ctx context.Context, svc *aztables.ServiceClient, blobs *container.Client) ([]string, error) {
	if c.srcTables != "" {
		tables := strings.Split(c.srcTables, ",")
		for i := range tables {
			tables[i] = strings.TrimSpace(tables[i])
		}
		return tables, nil
	}
	if c.opts.Resume {
		if tables, err := transfer.ExportedTables(ctx, blobs, c.prefix); err == nil {
			return tables, nil
		} else if !errors.Is(err, transfer.ErrInvalid) || errors.Is(err, transfer.ErrCorrupt) {
			return nil, err
		}
	}
	var tables []string
	for name, err := range table.ListTables(ctx, svc, c.srcTablesPrefix) {
		if err != nil {
			return nil, err
		}
		tables = append(tables, name)
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("transfer export: no table's name starts with %q", c.srcTablesPrefix)
	}
	return tables, nil
}

// parseRenames parses -rename: old=new pairs, comma-separated, keyed by
// the old name in lower case (table names are case-insensitive); nil for
// none. With the set's tables, each old name must be one of them: a
// misspelt name would leave its table restored under its own name, over
// the source when that is the target's account.
func parseRenames(s string, tables []string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("-rename: %q is not old=new", pair)
		}
		key := strings.ToLower(from)
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("-rename: %s renamed twice", from)
		}
		if tables != nil && !slices.ContainsFunc(tables, func(t string) bool { return strings.EqualFold(t, from) }) {
			return nil, fmt.Errorf("-rename: the set holds no table %s (its tables: %s)", from, strings.Join(tables, ", "))
		}
		m[key] = to
	}
	return m, nil
}

func (c *config) doOne(ctx context.Context) (transfer.Summary, error) {
	var (
		src, dst *aztables.Client
		blobs    *container.Client
		err      error
	)
	if c.src != "" && c.srcTable != "" {
		if src, err = tableClient(c.src, c.srcTable); err != nil {
			return transfer.Summary{}, err
		}
	}
	if c.dst != "" {
		if dst, err = tableClient(c.dst, c.dstTable); err != nil {
			return transfer.Summary{}, err
		}
	}
	if c.blob != "" {
		if blobs, err = containerClient(c.blob, c.container); err != nil {
			return transfer.Summary{}, err
		}
	}
	if c.opts.Blobs, err = c.largeBlobs(c.srcBlobs, c.src); err != nil {
		return transfer.Summary{}, err
	}
	if c.opts.TargetBlobs, err = c.largeBlobs(c.dstBlobs, c.dst); err != nil {
		return transfer.Summary{}, err
	}
	switch c.verb {
	case "export":
		if _, err := blobs.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return transfer.Summary{}, fmt.Errorf("creating container %s: %w", c.container, redact.Error(err))
		}
		if c.queue != "" {
			q, err := c.intents(ctx)
			if err != nil {
				return transfer.Summary{}, err
			}
			return transfer.DistributeExport(ctx, src, blobs, c.prefix, q, &c.opts)
		}
		return transfer.Export(ctx, src, blobs, c.prefix, &c.opts)
	case "work":
		// The handlers of every shared transfer the flags describe: each
		// takes its own intents only.
		var hs []eventual.Handler
		if src != nil && blobs != nil && c.prefix != "" {
			hs = append(hs, transfer.ExportHandler(src, blobs, c.prefix, &c.opts))
		}
		if blobs != nil && c.prefix != "" && dst != nil {
			hs = append(hs, transfer.ImportHandler(blobs, c.prefix, dst, &c.opts))
		}
		if src != nil && dst != nil {
			hs = append(hs, transfer.CopyHandler(src, dst, &c.opts))
		}
		if len(hs) == 0 {
			return transfer.Summary{}, errors.New("transfer work: give the flags of the shared export (-src, -src-table, -blob, -container, -prefix), import (-blob, -container, -prefix, -dst, -dst-table) or copy (-src, -src-table, -dst, -dst-table)")
		}
		q, err := c.intents(ctx)
		if err != nil {
			return transfer.Summary{}, err
		}
		return work(ctx, q, c.lease, hs)
	case "import":
		if err := c.createTargets(ctx); err != nil {
			return transfer.Summary{}, err
		}
		if c.queue != "" {
			q, err := c.intents(ctx)
			if err != nil {
				return transfer.Summary{}, err
			}
			return transfer.DistributeImport(ctx, blobs, c.prefix, dst, q, &c.opts)
		}
		return transfer.Import(ctx, blobs, c.prefix, dst, &c.opts)
	case "copy":
		if err := c.createTargets(ctx); err != nil {
			return transfer.Summary{}, err
		}
		if c.queue != "" {
			q, err := c.intents(ctx)
			if err != nil {
				return transfer.Summary{}, err
			}
			return transfer.DistributeCopy(ctx, src, dst, q, &c.opts)
		}
		return transfer.Copy(ctx, src, dst, &c.opts)
	default: // verify
		if blobs != nil {
			return transfer.VerifyExport(ctx, blobs, c.prefix, dst, &c.opts)
		}
		return transfer.Verify(ctx, src, dst, &c.opts)
	}
}

// largeBlobs returns the Blobs of flags (account, container, prefix), nil
// when no container is given. The account defaults to the table's when
// that is a connection string (which names every service of its
// account), else to -blob's.
func (c *config) largeBlobs(f [3]string, tableAccount string) (*transfer.Blobs, error) {
	account, name, prefix := f[0], f[1], f[2]
	if name == "" {
		return nil, nil
	}
	if account == "" && tableAccount != "" && isConnectionString(tableAccount) {
		account = tableAccount
	}
	if account == "" {
		account = c.blob
	}
	if account == "" {
		return nil, fmt.Errorf("container %s of large-entity blobs: give its account (-src-blobs-account, -dst-blobs-account or -blob)", name)
	}
	cc, err := containerClient(account, name)
	if err != nil {
		return nil, err
	}
	return &transfer.Blobs{Container: cc, Prefix: prefix}, nil
}

// intents returns the queue of a shared export's ranges, creating it and
// its poison queue when missing.
func (c *config) intents(ctx context.Context) (*eventual.Queue, error) {
	var qs [2]*azqueue.QueueClient
	for i, name := range []string{c.queueName, c.poisonName} {
		var err error
		if isConnectionString(c.queue) {
			qs[i], err = azqueue.NewQueueClientFromConnectionString(c.queue, name, nil)
		} else {
			var cred *azidentity.DefaultAzureCredential
			if cred, err = azidentity.NewDefaultAzureCredential(nil); err == nil {
				qs[i], err = azqueue.NewQueueClient(strings.TrimSuffix(c.queue, "/")+"/"+name, cred, nil)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, redact.Error(err))
		}
		if _, err := qs[i].Create(ctx, nil); err != nil && !queueerror.HasCode(err, queueerror.QueueAlreadyExists) {
			return nil, fmt.Errorf("creating queue %s: %w", name, redact.Error(err))
		}
	}
	return eventual.New(qs[0], qs[1], nil)
}

// work runs a worker of q with hs until the queue is empty (every range
// done, by this process or others), then reports the intents poisoned:
// ranges that failed MaxDeliveries times (a shared copy's ranges with
// entities the target rejects end there, naming them).
func work(ctx context.Context, q *eventual.Queue, lease time.Duration, hs []eventual.Handler) (transfer.Summary, error) {
	sum := transfer.Summary{Started: time.Now().UTC()}
	w, err := eventual.NewWorker(q, hs, &eventual.WorkerOptions{VisibilityTimeout: lease})
	if err != nil {
		return sum, err
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(runCtx) }()
	err = w.Drain(ctx)
	stop()
	if runErr := <-ran; err == nil && runErr != nil && !errors.Is(runErr, context.Canceled) {
		err = runErr
	}
	sum.Ended = time.Now().UTC()
	if err != nil {
		return sum, err
	}
	poisoned, err := q.Poisoned(ctx, 32)
	if err != nil || len(poisoned) == 0 {
		return sum, err
	}
	var why []string
	rejected := false
	for _, p := range poisoned {
		why = append(why, p.Kind+": "+p.Error)
		rejected = rejected || strings.Contains(p.Error, transfer.ErrRejected.Error())
	}
	err = fmt.Errorf("%d ranges (at least) failed and are in the poison queue:\n  %s", len(poisoned), strings.Join(why, "\n  "))
	if rejected {
		err = fmt.Errorf("%w: %w", transfer.ErrRejected, err)
	}
	return sum, err
}

// isConnectionString tells a connection string (key=value;...) from a URL.
func isConnectionString(s string) bool {
	return !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://")
}

func tableService(account string) (*aztables.ServiceClient, error) {
	if isConnectionString(account) {
		return table.NewServiceClientFromConnectionString(account, nil)
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("credential for %s: %w", redact.URL(account), err)
	}
	return table.NewServiceClient(account, cred, nil)
}

func tableClient(account, name string) (*aztables.Client, error) {
	svc, err := tableService(account)
	if err != nil {
		return nil, err
	}
	return table.NewClient(svc, name), nil
}

// createTargets creates the target table, and the container of its
// blobs, when missing.
func (c *config) createTargets(ctx context.Context) error {
	svc, err := tableService(c.dst)
	if err != nil {
		return err
	}
	if err := table.CreateTable(ctx, svc, c.dstTable); err != nil {
		return err
	}
	return c.createBlobTarget(ctx)
}

// createBlobTarget creates the container of the target's large-entity
// blobs, when given and missing.
func (c *config) createBlobTarget(ctx context.Context) error {
	if b := c.opts.TargetBlobs; b != nil {
		if _, err := b.Container.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return fmt.Errorf("creating container %s: %w", c.dstBlobs[1], redact.Error(err))
		}
	}
	return nil
}

func containerClient(account, name string) (*container.Client, error) {
	var (
		c   *azblob.Client
		err error
	)
	if isConnectionString(account) {
		c, err = azblob.NewClientFromConnectionString(account, nil)
	} else {
		var cred *azidentity.DefaultAzureCredential
		if cred, err = azidentity.NewDefaultAzureCredential(nil); err == nil {
			c, err = azblob.NewClient(account, cred, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("blob account: %w", redact.Error(err))
	}
	return c.ServiceClient().NewContainerClient(name), nil
}

// progressBar draws one line, redrawn in place.
type progressBar struct {
	w     io.Writer
	drawn bool
}

func (b *progressBar) report(p transfer.Progress) {
	line := fmt.Sprintf("%d entities, %.1f MB, %.0f entities/s", p.Entities, float64(p.Bytes)/1e6, p.Rate)
	if p.Total > 0 {
		line = fmt.Sprintf("[%-20s] %3.0f%% %s, ETA %s", strings.Repeat("#", int(20*p.Entities/p.Total)),
			100*float64(p.Entities)/float64(p.Total), line, p.ETA.Round(time.Second))
	}
	fmt.Fprintf(b.w, "\r%-100s", line)
	b.drawn = true
}

func (b *progressBar) done() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}

func printSummary(w io.Writer, verb string, s transfer.Summary) {
	end := s.Ended
	if end.IsZero() { // failed before the end
		end = time.Now()
	}
	var d time.Duration
	if !s.Started.IsZero() { // else it failed before it began
		d = end.Sub(s.Started).Round(time.Millisecond)
	}
	if s.Table != "" {
		verb += " " + s.Table
	}
	fmt.Fprintf(w, "%s: %d entities, %d bytes, %d chunks, %d transactions in %v\n", verb, s.Entities, s.Bytes, s.Chunks, s.Transactions, d)
	if s.Blobs > 0 {
		fmt.Fprintf(w, "blobs: %d, %d bytes\n", s.Blobs, s.BlobBytes)
	}
	if s.Rejected > 0 {
		fmt.Fprintf(w, "rejected: %d (listed: %d)\n", s.Rejected, len(s.Rejects))
		for _, r := range s.Rejects {
			fmt.Fprintf(w, "  reject PartitionKey=%q RowKey=%q: %s\n", r.PartitionKey, r.RowKey, r.Reason)
		}
	}
	if s.Differences > 0 {
		fmt.Fprintf(w, "differences: %d\n", s.Differences)
		for _, l := range []struct {
			what string
			keys []transfer.Key
		}{{"missing", s.Missing}, {"extra", s.Extra}, {"changed", s.Changed}} {
			for _, k := range l.keys {
				fmt.Fprintf(w, "  %s PartitionKey=%q RowKey=%q\n", l.what, k.PartitionKey, k.RowKey)
			}
		}
	}
}
