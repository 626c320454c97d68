package gossip

import "testing"

func TestProbeFailed(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"[INFO] memberlist: Suspect n2 has failed, no acks received\n", true},
		{"[INFO] memberlist: Suspect n2.example has failed, no acks received", true},
		{"[DEBUG] memberlist: Failed ping: n2 (timeout reached)", false},
		{"[INFO] memberlist: Marking n2 as failed, suspect timeout reached (2 peer confirmations)", false},
		{"", false},
	} {
		_, msg := parseLogLine(tc.line)
		if got := probeFailed(msg); got != tc.want {
			t.Errorf("probeFailed(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}
