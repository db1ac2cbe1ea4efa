//go:build linux

package emulator_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/emulator"
)

// helperEnv makes the test binary act as a process that starts an emulator,
// prints its PID and waits to be killed.
const helperEnv = "TABLEKIT_TABLETEST_HELPER"

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	e, err := emulator.Start(context.Background(), nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("pid", e.PID())
	select {} // wait to be killed
}

// An emulator outlives no parent: when the process that started it is killed
// with SIGKILL (no chance to call Stop), the emulator exits on its own, and
// leaves nothing behind in the temporary folder.
func TestEmulatorDiesWithParent(t *testing.T) {
	if os.Getenv(helperEnv) == "1" || os.Getenv(emulator.ConnectionStringEnv) != "" {
		t.Skip("helper process, or a real account is configured")
	}
	skipWithoutEmulator(t)
	t.Parallel()
	// Orphaned descendants of this process become its children, so that it
	// can wait for the emulator once the helper that started it is gone.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	tmp := t.TempDir() // the helper's and the emulator's temporary folder
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		_ = cmd.Process.Kill()
		t.Fatalf("helper said %q, %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if !alive(pid) {
		t.Fatalf("emulator %d is not running while its parent lives", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The emulator notices the closed pipe asynchronously. It is an orphan
	// now, adopted by this process (a child subreaper): wait for its exit.
	exited := make(chan error, 1)
	go func() { exited <- waitPID(pid) }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("waiting for emulator %d: %v", pid, err)
		}
	case <-time.After(15 * time.Second):
		_ = syscallKill(pid)
		t.Fatalf("emulator %d still running 15 s after its parent was killed", pid)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		t.Errorf("left behind in the temporary folder: %s", f.Name())
	}
}

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, linux/prctl.h

// waitPID waits for the child pid to exit and reaps it.
func waitPID(pid int) error {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			return err
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
