// Package exectest holds the helpers the tests of exec, exec/stepd and
// exec/task share: an unprivileged user, files it may or may not touch,
// and a test's logger. Tests only; nothing else imports it.
package exectest

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the unprivileged user the tests open files and run tasks as.
var Nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{65534}}

// SecretText is what Secret writes: a line as /etc/shadow holds.
const SecretText = "root:$6$secret-hash:19000:0:99999:7:::\n"

// UserDir is a new directory Nobody can write in, outside t.TempDir
// (whose parent is root's alone), removed when the test ends.
func UserDir(t *testing.T) string {
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

// Secret writes content to dir/secret, a file only root may read or
// write, and returns its path.
func Secret(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ReadFile returns the file's content, failing the test when it cannot.
func ReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// MustBeRoot fails a test that needs root to act as another user; only
// -short skips it.
func MustBeRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root to act as another user (-short)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root to act as another user: run as root, or with -short")
	}
}

// Logger logs at debug level to the test's output.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}
