package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// syncBuffer is a bytes.Buffer safe for a writer process and a reader test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// osCommand is the shoal binary as an exec.Cmd bound to ctx.
func osCommand(ctx context.Context, args ...string) *osexec.Cmd {
	return osexec.CommandContext(ctx, shoalBin, args...)
}

// processAlive reports whether pid runs; a zombie counts as gone.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
