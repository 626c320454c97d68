package gossip

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestLogEvents: every event is read and logged, and the loop ends when
// the channel closes (Shutdown).
func TestLogEvents(t *testing.T) {
	events := make(chan Event, 2)
	events <- Event{Kind: EventJoin, Member: Member{Name: "n1", Status: StatusAlive}}
	events <- Event{Kind: EventFail, Member: Member{Name: "n2", Status: StatusFailed}}
	close(events)
	var buf bytes.Buffer
	LogEvents(context.Background(), events, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	out := buf.String()
	if strings.Count(out, "member event") != 2 || !strings.Contains(out, "member=n2") || !strings.Contains(out, "event=fail") {
		t.Errorf("logged %q; want the join of n1 and the failure of n2", out)
	}
}
