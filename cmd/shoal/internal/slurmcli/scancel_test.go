package slurmcli

import (
	"strings"
	"testing"
)

func TestScancelIDs(t *testing.T) {
	ts, err := parseScancelIDs([]string{"5", "6.1", "7,8"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 4 || ts[0].job != 5 || ts[0].step != -1 || ts[1].job != 6 || ts[1].step != 1 || ts[3].job != 8 {
		t.Errorf("targets = %+v", ts)
	}
	for _, bad := range []string{"abc", "0", "5.x", "5_x", "5_2.1", "5_[1-"} {
		_, err := parseScancelIDs([]string{bad})
		if err == nil || !strings.HasPrefix(err.Error(), "Invalid job id "+bad) {
			t.Errorf("%s: err %v; want Invalid job id %s", bad, err, bad)
		}
	}
	ts, err = parseScancelIDs([]string{"5_2,6_[1-3,7],9"})
	if err != nil || len(ts) != 3 || ts[0].element != "5_2" || ts[1].element != "6_[1-3,7]" || ts[1].job != 6 || ts[2].element != "" {
		t.Errorf("array elements: %+v, %v", ts, err)
	}
	if _, err := parseScancelStates("done"); err == nil {
		t.Error("scancel -t done accepted")
	}
}
