package emulator

import (
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvWithoutAzurite returns env without TABLEKIT_AZURITE and with PATH
// stripped of folders that hold an `azurite` command, so a child process
// finds only the Azurite it is given (for tests of the install and
// of tabletest that start a child process).
func EnvWithoutAzurite(env []string) []string {
	var out []string
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, AzuriteEnv+"="), strings.HasPrefix(kv, CacheEnv+"="):
			continue
		case strings.HasPrefix(kv, "PATH="):
			var keep []string
			for _, dir := range filepath.SplitList(strings.TrimPrefix(kv, "PATH=")) {
				if _, err := exec.LookPath(filepath.Join(dir, "azurite")); err != nil {
					keep = append(keep, dir)
				}
			}
			kv = "PATH=" + strings.Join(keep, string(filepath.ListSeparator))
		}
		out = append(out, kv)
	}
	return out
}
