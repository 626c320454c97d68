package gossip

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// logWriter adapts memberlist's *log.Logger output into slog. memberlist
// writes one line per call in the form "[LEVEL] memberlist: message"; the
// level tag picks the slog level and is stripped with the prefix.
type logWriter struct {
	log *slog.Logger
}

// newStdLogger returns a *log.Logger (what memberlist.Config.Logger takes)
// whose every line goes to l.
func newStdLogger(l *slog.Logger) *log.Logger {
	return log.New(logWriter{log: l}, "", 0)
}

func (w logWriter) Write(p []byte) (int, error) {
	level, msg := parseLogLine(string(p))
	// memberlist gives no context; the record is emitted synchronously.
	w.log.Log(context.Background(), level, msg)
	return len(p), nil
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
