package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// cpuProfileEnv names a directory: an agent started with it set writes
// a CPU profile of its whole run to DIR/<node name>.cpu.pprof when it
// stops. A debugging aid for measuring the agent's side of a request
// (BENCHMARKS.md, "Submit path (issue 15)"); `shoal dev` agents inherit
// it from the environment.
const cpuProfileEnv = "SHOAL_CPUPROFILE"

// startCPUProfile starts profiling into dir when dir is set and returns
// the function that stops it; with dir empty it does nothing.
func startCPUProfile(dir, name string, log *slog.Logger) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	path := filepath.Join(dir, name+".cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("$%s: start CPU profile: %w", cpuProfileEnv, err)
	}
	log.Info("writing a CPU profile until the agent stops", "path", path)
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Warn("close CPU profile", "path", path, "err", err)
		}
	}, nil
}
