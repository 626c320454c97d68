package gossip

import (
	"context"
	"log/slog"
)

// LogEvents consumes membership events until ctx ends or events closes
// (Shutdown): it logs each at debug and keeps the buffer from filling, so
// that no event is dropped for want of a reader. Those that act on
// membership (the voter and bootstrap loops) read Members themselves.
func LogEvents(ctx context.Context, events <-chan Event, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			log.Debug("member event", "event", ev.Kind.String(), "member", ev.Member.Name, "status", string(ev.Member.Status))
		}
	}
}
