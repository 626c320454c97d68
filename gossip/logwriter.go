package gossip

import (
	"context"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
)

// logWriter adapts memberlist's *log.Logger output into slog. memberlist
// writes one line per call in the form "[LEVEL] memberlist: message"; the
// level tag picks the slog level and is stripped with the prefix.
type logWriter struct {
	log *slog.Logger
	// probeFailures counts this node's failed probes, which memberlist
	// reports only in its log (see probeFailed).
	probeFailures *atomic.Uint64
}

// newStdLogger returns a *log.Logger (what memberlist.Config.Logger takes)
// whose every line goes to l, counting failed probes in probeFailures.
func newStdLogger(l *slog.Logger, probeFailures *atomic.Uint64) *log.Logger {
	return log.New(logWriter{log: l, probeFailures: probeFailures}, "", 0)
}

func (w logWriter) Write(p []byte) (int, error) {
	level, msg := parseLogLine(string(p))
	if w.probeFailures != nil && probeFailed(msg) {
		w.probeFailures.Add(1)
	}
	// memberlist gives no context; the record is emitted synchronously.
	w.log.Log(context.Background(), level, msg)
	return len(p), nil
}

// probeFailed reports whether a memberlist message says a probe of ours
// got no ack, direct or indirect: memberlist (v0.5) logs "Suspect NAME
// has failed, no acks received" and suspects the node, and has no metric
// or callback that tells this apart from suspicions it hears from others.
func probeFailed(msg string) bool {
	return strings.HasPrefix(msg, "Suspect ") && strings.HasSuffix(msg, " has failed, no acks received")
}

// parseLogLine splits "[WARN] memberlist: text\n" into a level and "text".
// A line without a recognized tag is logged at info level unchanged.
func parseLogLine(s string) (slog.Level, string) {
	s = strings.TrimRight(s, "\r\n")
	level := slog.LevelInfo
	if strings.HasPrefix(s, "[") {
		if end := strings.IndexByte(s, ']'); end > 0 {
			known := true
			switch strings.ToUpper(s[1:end]) {
			case "TRACE", "DEBUG":
				level = slog.LevelDebug
			case "INFO":
				level = slog.LevelInfo
			case "WARN", "WARNING":
				level = slog.LevelWarn
			case "ERR", "ERROR":
				level = slog.LevelError
			default:
				known = false
			}
			if known {
				s = strings.TrimLeft(s[end+1:], " ")
			}
		}
	}
	s = strings.TrimPrefix(s, "memberlist: ")
	return level, s
}
