package emulator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ConnectionStringEnv names the environment variable that points tests at an
// existing account (Azure Storage, or a Cosmos DB Table API account for the
// table-only tests) instead of a local
const ConnectionStringEnv = "AZURE_STORAGE_CONNECTION_STRING"

// StorageConnectionStringEnv names the Storage account whose queues and
// blob containers tests use when AZURE_STORAGE_CONNECTION_STRING names a
// Cosmos DB Table API account, which has neither (the conformance suite on
// Cosmos DB: see docs/cosmos.md). Without it there, QueueService, BlobService,
// Queue and Container skip the test (the tests of tabletest.Env).
const StorageConnectionStringEnv = "TABLEKIT_STORAGE_CONNECTION_STRING"

// NoEmulatorEnv names the opt-out for machines without Node.js: when it is set
// to 1 and no connection string is given, tabletest.New skips the test instead of
// failing, and tabletest.Main skips the binary's examples. It is ignored when the CI
// environment variable is set, so a missing emulator always fails in CI.
const NoEmulatorEnv = "TABLEKIT_NO_EMULATOR"

// Well-known Azurite development account. The key is public and documented by
// Microsoft; it is not a secret.
const (
	DevAccount = "devstoreaccount1"
	DevKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// InstallCommand is the command that installs Azurite where tabletest finds
// it from any module and any folder: on PATH. Errors about a missing emulator
// name it. (Inside tablekit's own repository, make test and make demo install
// the pinned version into node_modules instead.)
const InstallCommand = "npm install -g azurite"

// AzuriteEnv names the environment variable that tells tabletest which
// Azurite to run: the path of its entry script (dist/src/azurite.js in the
// npm package) or of the azurite command npm installs (a link to that
// script). When it is set, it is the only place looked at.
const AzuriteEnv = "TABLEKIT_AZURITE"

// ErrNotInstalled is returned when no Azurite installation can be found.
var ErrNotInstalled = errors.New("tabletest: Azurite emulator not installed")

// ErrExited is wrapped by the errors of an emulator whose process
// has exited (Emulator.Err), and so by those of ConnectionString, New and an
// Env's clients once the shared emulator has died.
var ErrExited = errors.New("tabletest: Azurite emulator exited")

// azuriteScript is the path of Azurite's entry point inside an npm install.
var azuriteScript = filepath.Join("node_modules", "azurite", "dist", "src", "azurite.js")

// watchdog runs Azurite inside node and makes it exit when its standard input
// closes, that is when the process that started it exits, however it exits.
const watchdog = `process.stdin.on('end',()=>process.exit(0));process.stdin.on('error',()=>process.exit(0));` +
	`process.stdin.resume();process.argv.splice(1,0,'azurite');require(process.env.TABLEKIT_AZURITE_SCRIPT);`

var listening = regexp.MustCompile(`Azurite (Blob|Queue|Table) service is successfully listening at (http://\S+)`)

// Options configures Start. A nil *Options means defaults.
type Options struct {
	// Dir is where FindAzurite's search for node_modules/azurite starts;
	// the search walks up to the file system root. Default: the working
	// directory.
	Dir string
	// StartTimeout bounds the wait until all three services answer.
	// Default: 2 minutes (Azurite can take over a minute to start on a
	// loaded 2-core machine).
	StartTimeout time.Duration
}

// Emulator is a running Azurite process started by Start: in-memory,
// listening on loopback ports chosen by the operating system. Its methods are
// safe for concurrent use.
type Emulator struct {
	// BlobURL, QueueURL and TableURL are the service endpoints, including the
	// account path segment (http://127.0.0.1:PORT/devstoreaccount1).
	BlobURL, QueueURL, TableURL string

	cmd      *exec.Cmd
	out      *outputTail
	exited   chan struct{} // closed when the process has exited and its output is read
	exitErr  error         // set before exited is closed
	stopping atomic.Bool   // Stop has been called
	stopOnce sync.Once
	stopErr  error
}

// FindAzurite returns the path of Azurite's entry script. It looks, in this
// order, at
//
//  1. the path in TABLEKIT_AZURITE (AzuriteEnv), when that is set (and
//     then nowhere else);
//  2. node_modules/azurite in dir and its parent folders (dir "" means the
//     working directory): a project's own `npm ci` or `npm install azurite`;
//  3. the azurite command on PATH, as `npm install -g azurite` installs it;
//  4. the per-user cache (see CacheEnv), where InstallAzurite installs the
//     pinned version (AzuriteVersion) and Start has it installed on
//     the first run on a machine.
//
// It installs nothing. The error wraps ErrNotInstalled, lists what
// was tried and names the fixes, InstallCommand among them.
func FindAzurite(dir string) (string, error) {
	if p := os.Getenv(AzuriteEnv); p != "" {
		script, err := nodeScript(p)
		if err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v; point it at azurite's dist/src/azurite.js or the azurite command, "+
				"or unset it to search node_modules and PATH", ErrNotInstalled, AzuriteEnv, p, err)
		}
		return script, nil
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("tabletest: finding Azurite: %w", err)
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("tabletest: finding Azurite: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, azuriteScript)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	onPath := "not found"
	if exe, err := exec.LookPath("azurite"); err == nil {
		script, err := nodeScript(exe)
		if err == nil {
			return script, nil
		}
		onPath = fmt.Sprintf("%s: %v", exe, err)
	}
	var cache string
	switch cacheDir, script, ok, err := cachedAzurite(); {
	case err != nil:
		cache = err.Error()
	case ok:
		return script, nil
	default:
		cache = cacheDir + ": not there"
	}
	return "", fmt.Errorf("%w; tried: %s (not set); %s in %s and its parent folders (none); azurite on PATH (%s); "+
		"Azurite %s in the per-user cache (%s). "+
		"Fix: run the tests with npm on PATH and without %s=1 (they install it into that cache), run `%s`, or set %s to the path of an installed azurite "+
		"(or set %s to use an existing account)",
		ErrNotInstalled, AzuriteEnv, azuriteScript, dir, onPath, AzuriteVersion, cache, NoInstallEnv, InstallCommand, AzuriteEnv, ConnectionStringEnv)
}

// nodeScript resolves p, Azurite's entry script or a command that stands for
// it, to a script node can require: p itself after following links when it
// is a Node.js script (a .js file, or a #! line naming node), else the
// script npm's global layout puts beside a command shim (bin/azurite next to
// lib/node_modules, or azurite.cmd next to node_modules on Windows).
func nodeScript(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a file", real)
	}
	if isNodeScript(real) {
		return real, nil
	}
	dir := filepath.Dir(real)
	for _, near := range []string{
		filepath.Join(dir, "..", "lib", azuriteScript),
		filepath.Join(dir, azuriteScript),
	} {
		if _, err := os.Stat(near); err == nil {
			return filepath.Clean(near), nil
		}
	}
	return "", fmt.Errorf("%s is not a Node.js script, and no %s is beside it", real, azuriteScript)
}

// isNodeScript reports whether the file at p is JavaScript node can run:
// a .js or .cjs file, or one whose #! line names node.
func isNodeScript(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".js", ".cjs":
		return true
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	return strings.HasPrefix(line, "#!") && strings.Contains(line, "node")
}

// Start starts an in-memory Azurite on free loopback ports and waits
// until its blob, queue and table services answer. The process exits when
// Stop is called or, at the latest, when the calling process exits.
func Start(ctx context.Context, opts *Options) (*Emulator, error) {
	if opts == nil {
		opts = &Options{}
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	script, err := findOrInstall(ctx, opts.Dir, os.Stderr)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: Node.js is not on PATH (tablekit runs Azurite on Node.js >= 20): %v", ErrNotInstalled, err)
	}
	cmd := exec.Command(node, "-e", watchdog, "--",
		"--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck", "--silent",
		"--blobHost", "127.0.0.1", "--blobPort", "0",
		"--queueHost", "127.0.0.1", "--queuePort", "0",
		"--tableHost", "127.0.0.1", "--tablePort", "0")
	// In memory, with telemetry off and no debug log, Azurite writes no
	// files: it needs no folder of its own that a killed test binary could
	// leave behind. Its working directory (the --location it checks) is the
	// temporary folder all the same, never the caller's source tree.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "TABLEKIT_AZURITE_SCRIPT="+script)
	stdin, err := cmd.StdinPipe() // closed by the OS when this process exits: the watchdog ends Azurite
	if err != nil {
		return nil, fmt.Errorf("tabletest: %w", err)
	}
	urls := make(chan [2]string, 3)
	out := &outputTail{onLine: func(line string) {
		if m := listening.FindStringSubmatch(line); m != nil {
			select {
			case urls <- [2]string{m[1], m[2]}:
			default: // a service announced twice; the first address stands
			}
		}
	}}
	// exec copies the output into out and Wait returns only once the copy
	// has reached the end of it, so no last words are lost; WaitDelay bounds
	// that wait should a stray child of Azurite keep the pipe open.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("tabletest: starting Azurite: %w", err)
	}
	_ = stdin // kept open for the life of the process on purpose

	e := &Emulator{cmd: cmd, exited: make(chan struct{}), out: out}
	go func() {
		_ = cmd.Wait()
		e.exitErr = &exitError{pid: cmd.Process.Pid, state: cmd.ProcessState.String(), stopped: e.stopping.Load(), output: out.String()}
		close(e.exited)
	}()
	output := out.String

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for got := 0; got < 3; {
		select {
		case u := <-urls:
			got++
			url := u[1] + "/" + DevAccount
			switch u[0] {
			case "Blob":
				e.BlobURL = url
			case "Queue":
				e.QueueURL = url
			case "Table":
				e.TableURL = url
			}
		case <-e.exited:
			return nil, fmt.Errorf("tabletest: Azurite did not start: %w", e.Err())
		case <-ctx.Done():
			_ = e.Stop()
			return nil, fmt.Errorf("tabletest: Azurite did not start: %w; its output:\n%s", ctx.Err(), output())
		}
	}
	for _, u := range []string{e.BlobURL, e.QueueURL, e.TableURL} {
		if err := waitAnswers(ctx, u); err != nil {
			_ = e.Stop()
			return nil, fmt.Errorf("tabletest: Azurite at %s does not answer: %w; its output:\n%s", u, err, output())
		}
	}
	return e, nil
}

// waitAnswers polls url until any HTTP response comes back.
func waitAnswers(ctx context.Context, url string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// ConnectionString returns a connection string with explicit endpoints for
// the emulator (the SDKs do not understand UseDevelopmentStorage=true).
func (e *Emulator) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + DevAccount + ";AccountKey=" + DevKey +
		";BlobEndpoint=" + e.BlobURL + ";QueueEndpoint=" + e.QueueURL + ";TableEndpoint=" + e.TableURL + ";"
}

// PID returns the emulator's process id.
func (e *Emulator) PID() int { return e.cmd.Process.Pid }

// Stop kills the emulator process and waits until it has exited. Its data
// lives only in memory, so nothing is lost that a graceful stop would keep.
// Calling Stop again returns the first result.
func (e *Emulator) Stop() error {
	e.stopOnce.Do(func() {
		select {
		case <-e.exited:
			return
		default:
		}
		e.stopping.Store(true)
		if err := e.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			e.stopErr = fmt.Errorf("tabletest: killing Azurite (pid %d): %w", e.PID(), err)
			return
		}
		<-e.exited
	})
	return e.stopErr
}

// Exited returns a channel that is closed once the emulator process has
// exited and its output has been read.
func (e *Emulator) Exited() <-chan struct{} { return e.exited }

// Err returns nil while the emulator process runs. Once it has exited, for
// whatever reason (Stop included), Err returns an error that wraps
// ErrExited and ends with the emulator's last lines of output.
func (e *Emulator) Err() error {
	select {
	case <-e.exited:
		return e.exitErr
	default:
		return nil
	}
}

// exitError is Emulator.Err's error.
type exitError struct {
	pid     int
	state   string // how it exited: "exit status 1", "signal: killed"
	stopped bool   // by Stop
	output  string
}

func (e *exitError) Error() string {
	how := e.state
	if e.stopped {
		how += ", by Stop"
	}
	return fmt.Sprintf("%v (pid %d, %s); its last output:\n%s", ErrExited, e.pid, how, e.output)
}

func (e *exitError) Unwrap() error { return ErrExited }

// NonRetriable marks the error as final for azcore's retry policy: the
// emulator does not come back.
func (e *exitError) NonRetriable() {}

// Bounds of the output an Emulator keeps for error messages.
const (
	tailLines    = 30   // the last lines
	maxLineBytes = 1024 // the first bytes of each line
)

// outputTail is the writer an emulator's output goes to. It hands every
// complete line to onLine and keeps the last tailLines lines, each cut to
// maxLineBytes, so lines of any length and output of any volume take
// bounded memory. Safe for concurrent use.
type outputTail struct {
	onLine func(line string) // called from Write, without mu held

	mu      sync.Mutex
	lines   [tailLines]string // a ring: lines[next] is the oldest once full
	next, n int
	partial []byte // the start of the line being written
	cut     int    // bytes of that line left out of partial
	cr      bool   // that line ends with \r so far
}

// Write implements io.Writer; it never fails.
func (o *outputTail) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		o.mu.Lock()
		keep := min(len(chunk), max(maxLineBytes-len(o.partial), 0))
		o.partial = append(o.partial, chunk[:keep]...)
		o.cut += len(chunk) - keep
		if len(chunk) > 0 {
			o.cr = chunk[len(chunk)-1] == '\r'
		}
		var line string
		if i >= 0 {
			line = o.currentLocked()
			o.lines[o.next] = line
			o.next = (o.next + 1) % tailLines
			o.n = min(o.n+1, tailLines)
			o.partial, o.cut, o.cr = o.partial[:0], 0, false
		}
		o.mu.Unlock()
		if i < 0 {
			break
		}
		if o.onLine != nil {
			o.onLine(line)
		}
		p = p[i+1:]
	}
	return written, nil
}

// currentLocked returns the line being written as kept, with a note of the
// bytes left out.
func (o *outputTail) currentLocked() string {
	kept, cut := o.partial, o.cut
	if o.cr { // a CRLF line end
		if cut > 0 {
			cut--
		} else {
			kept = kept[:len(kept)-1]
		}
	}
	if cut > 0 {
		return fmt.Sprintf("%s... [%d more bytes]", strings.ToValidUTF8(string(kept), ""), cut)
	}
	return string(kept)
}

// String returns the kept lines, oldest first, and the unfinished last line
// if any.
func (o *outputTail) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := make([]string, 0, o.n+1)
	for i := range o.n {
		lines = append(lines, o.lines[(o.next-o.n+i+tailLines)%tailLines])
	}
	if len(o.partial) > 0 || o.cut > 0 {
		lines = append(lines, o.currentLocked())
	}
	return strings.Join(lines, "\n")
}
