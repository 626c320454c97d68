package task

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Helpers as in package exec's tests.

// nobody is the unprivileged user these tests open files and run tasks as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{65534}}

// userDir is a new directory nobody can write in, outside t.TempDir
// (whose parent is root's alone).
func userDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shoal-output-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// secret writes a file only root may read or write.
func secret(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const secretText = "root:$6$secret-hash:19000:0:99999:7:::\n"

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustBeRoot fails a test that needs root to act as another user; only
// -short skips it.
func mustBeRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root to act as another user (-short)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root to act as another user: run as root, or with -short")
	}
}
