package gossip

import (
	"log/slog"
	"net"
	"strings"
	"testing"
)

func TestNormalizeJoinAddr(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "10.0.0.1", want: "10.0.0.1:7072"},
		{in: " 10.0.0.1:9000 ", want: "10.0.0.1:9000"},
		{in: "node1", want: "node1:7072"},
		{in: "node1.example.com:7946", want: "node1.example.com:7946"},
		{in: "::1", want: "[::1]:7072"},
		{in: "[::1]", want: "[::1]:7072"},
		{in: "[fe80::1]:9", want: "[fe80::1]:9"},
		{in: "", err: `want "host" or "host:port"`},
		{in: "host:", err: `port "": want 1..65535`},
		{in: "host:0", err: `port "0": want 1..65535`},
		{in: "host:70000", err: `port "70000": want 1..65535`},
		{in: "host:http", err: `port "http"`},
		{in: ":7072", err: "empty or malformed host"},
		{in: "[node1]", err: "bracketed host must be an IPv6 address"},
		{in: "a b", err: `want "host" or "host:port"`},
		{in: "a:b:c", err: "too many colons"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := normalizeJoinAddr(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("normalizeJoinAddr(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("normalizeJoinAddr(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// Join addresses are user text (--join): never panic, and anything
// accepted is a host:port with a valid port.
func FuzzNormalizeJoinAddr(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "h:1", "::1", "[::1]:80", "", ":", "[", "[]:1", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := normalizeJoinAddr(s)
		if err != nil {
			return
		}
		host, port, err := net.SplitHostPort(got)
		if err != nil || host == "" || port == "" || port == "0" {
			t.Fatalf("normalizeJoinAddr(%q) = %q: not a valid host:port (%v)", s, got, err)
		}
	})
}

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		in    string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=1.2.3.4\n", slog.LevelDebug, "Stream connection from=1.2.3.4"},
		{"[INFO] memberlist: Suspect n2 has failed\n", slog.LevelInfo, "Suspect n2 has failed"},
		{"[WARN] memberlist: Refuting a suspect message\n", slog.LevelWarn, "Refuting a suspect message"},
		{"[ERR] memberlist: Conflicting address for x\n", slog.LevelError, "Conflicting address for x"},
		{"[ERROR] Failed to shutdown transport\n", slog.LevelError, "Failed to shutdown transport"},
		{"no tag at all", slog.LevelInfo, "no tag at all"},
		{"[odd] memberlist: x", slog.LevelInfo, "[odd] memberlist: x"},
		{"[", slog.LevelInfo, "["},
		{"", slog.LevelInfo, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			level, msg := parseLogLine(tt.in)
			if level != tt.level || msg != tt.msg {
				t.Fatalf("parseLogLine(%q) = %v, %q; want %v, %q", tt.in, level, msg, tt.level, tt.msg)
			}
		})
	}
}

func TestStdLoggerRoutesToSlog(t *testing.T) {
	h := newRecordHandler()
	l := newStdLogger(slog.New(h), nil)
	l.Printf("[WARN] memberlist: hello %d", 7)
	recs := h.all()
	if len(recs) != 1 || recs[0].Level != slog.LevelWarn || recs[0].Message != "hello 7" {
		t.Fatalf("records = %+v; want one warn record %q", recs, "hello 7")
	}
}
