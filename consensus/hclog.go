package consensus

import (
	"context"
	"io"
	"log"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// levelTrace is where hclog's Trace lands in slog: below Debug, so it is
// off unless a handler asks for it explicitly.
const levelTrace = slog.LevelDebug - 4

// hclogAdapter implements hclog.Logger on top of slog, so raft (and its
// transport and snapshot store) log through the agent's handler instead of
// printing to stderr.
type hclogAdapter struct {
	base    *slog.Logger // the component logger, without name or implied args
	log     *slog.Logger // base with name and implied args applied
	name    string
	implied []any
	// floor is an extra minimum level set through SetLevel, shared by all
	// loggers derived from one root (hclog.NoLevel means none).
	floor *atomic.Int32
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHclogAdapter(base *slog.Logger) *hclogAdapter {
	floor := new(atomic.Int32)
	floor.Store(int32(hclog.NoLevel))
	return derive(base, "", nil, floor)
}

func derive(base *slog.Logger, name string, implied []any, floor *atomic.Int32) *hclogAdapter {
	l := base
	if name != "" {
		l = l.With("subsystem", name)
	}
	if len(implied) > 0 {
		l = l.With(implied...)
	}
	return &hclogAdapter{base: base, log: l, name: name, implied: implied, floor: floor}
}

func toSlog(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (a *hclogAdapter) enabled(level hclog.Level) bool {
	if f := hclog.Level(a.floor.Load()); f != hclog.NoLevel && level < f {
		return false
	}
	return a.log.Enabled(context.Background(), toSlog(level))
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || !a.enabled(level) {
		return
	}
	a.log.Log(context.Background(), toSlog(level), msg, args...)
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return append([]any(nil), a.implied...) }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	implied := append(append([]any(nil), a.implied...), args...)
	return derive(a.base, a.name, implied, a.floor)
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return derive(a.base, name, a.implied, a.floor)
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return derive(a.base, name, a.implied, a.floor)
}

func (a *hclogAdapter) SetLevel(level hclog.Level) { a.floor.Store(int32(level)) }

func (a *hclogAdapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := slog.LevelInfo
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = toSlog(opts.ForceLevel)
	}
	return slog.NewLogLogger(a.log.Handler(), level).Writer()
}
