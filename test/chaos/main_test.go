package chaos_test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"
)

// shoalBin is the binary under test, built once by TestMain.
var shoalBin string

// TestMain builds the shoal binary from this checkout, or takes
// $SHOAL_CHAOS_BIN when set (to chaos-test a given build). With
// $SHOAL_CHAOS_UDP set it is the UDP helper of udp_test.go instead.
func TestMain(m *testing.M) {
	if spec := os.Getenv(udpHelperEnv); spec != "" {
		// This binary was started inside a namespace as a UDP helper.
		os.Exit(udpHelper(spec))
	}
	if bin := os.Getenv("SHOAL_CHAOS_BIN"); bin != "" {
		shoalBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "shoal-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "make temp dir:", err)
		os.Exit(1)
	}
	shoalBin = filepath.Join(dir, "shoal")
	build := osexec.Command("go", "build", "-o", shoalBin, "../../cmd/shoal")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build shoal:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
