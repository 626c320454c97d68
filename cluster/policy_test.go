package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParsePolicyJSON(t *testing.T) {
	p, err := ParsePolicyJSON([]byte(`{
		"weights": {"age": 1000, "fair_share": 10000, "job_size": 500, "qos": 2000},
		"max_age": "24h", "half_life": "0s",
		"accounts": {"physics": {"shares": 60, "users": {"bob": 1, "alice": 2}}, "bio": {"shares": 40}},
		"qos": {"normal": 0, "high": 100}
	}`))
	if err != nil {
		t.Fatalf("ParsePolicyJSON: %v", err)
	}
	want := Policy{
		Weights:  Weights{Age: 1000, FairShare: 10000, JobSize: 500, QoS: 2000},
		MaxAge:   24 * time.Hour,
		HalfLife: 0,
		Accounts: []AccountShare{
			{Name: "bio", Shares: 40},
			{Name: "physics", Shares: 60, Users: []UserShare{{"alice", 2}, {"bob", 1}}},
		},
		QoS: []QoSLevel{{Name: "high", Priority: 100}, {Name: "normal", Priority: 0}},
	}
	if !p.Equal(&want) {
		t.Fatalf("ParsePolicyJSON = %+v; want %+v", p, want)
	}
	// The file form reads back to the same policy.
	f := p.File()
	if f.MaxAge != "24h0m0s" || f.Accounts["physics"].Users["alice"] != 2 || f.QoS["high"] != 100 {
		t.Errorf("File() = %+v", f)
	}
	if c := p.Clone(); !c.Equal(&p) || &c.Accounts[1].Users[0] == &p.Accounts[1].Users[0] {
		t.Errorf("Clone is not a deep copy")
	}
	d, err := ParsePolicyJSON([]byte(`{}`))
	if err != nil || d.MaxAge != 7*24*time.Hour || d.HalfLife != 7*24*time.Hour {
		t.Errorf("ParsePolicyJSON({}) = %+v, %v; want week-long max_age and half_life", d, err)
	}
}

// TestPolicyScheduler: the scheduler setting reads and prints back;
// "shoal" is the default and canonically empty, so a file that names it
// is the same policy as one that does not.
func TestPolicyScheduler(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want      Policy
		name      string
		fileSched string
	}{
		{`{}`, Policy{}, SchedulerShoal, "shoal"},
		{`{"scheduler": "shoal"}`, Policy{}, SchedulerShoal, "shoal"},
		{`{"scheduler": "qssf"}`, Policy{Scheduler: SchedulerQSSF}, SchedulerQSSF, "qssf"},
		{`{"scheduler": "qssf", "starve_after": "48h", "aging_half": "30m"}`,
			Policy{Scheduler: SchedulerQSSF, StarveAfter: 48 * time.Hour, AgingHalf: 30 * time.Minute}, SchedulerQSSF, "qssf"},
	} {
		p, err := ParsePolicyJSON([]byte(tc.in))
		if err != nil {
			t.Fatalf("ParsePolicyJSON(%s): %v", tc.in, err)
		}
		if p.Scheduler != tc.want.Scheduler || p.StarveAfter != tc.want.StarveAfter || p.AgingHalf != tc.want.AgingHalf {
			t.Errorf("ParsePolicyJSON(%s) = scheduler %q starve_after %s aging_half %s; want %q %s %s", tc.in,
				p.Scheduler, p.StarveAfter, p.AgingHalf, tc.want.Scheduler, tc.want.StarveAfter, tc.want.AgingHalf)
		}
		if got := p.SchedulerName(); got != tc.name {
			t.Errorf("ParsePolicyJSON(%s).SchedulerName() = %q; want %q", tc.in, got, tc.name)
		}
		f := p.File()
		if f.Scheduler != tc.fileSched {
			t.Errorf("ParsePolicyJSON(%s).File().Scheduler = %q; want %q", tc.in, f.Scheduler, tc.fileSched)
		}
		back, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if q, err := ParsePolicyJSON(back); err != nil || !q.Equal(&p) {
			t.Errorf("file form %s reads back as %+v, %v; want %+v", back, q, err, p)
		}
	}
	if (*Policy)(nil).SchedulerName() != SchedulerShoal {
		t.Errorf("nil policy's scheduler is not shoal")
	}
	a, b := Policy{Scheduler: SchedulerQSSF}, Policy{}
	if a.Equal(&b) {
		t.Errorf("Equal ignores Scheduler")
	}
}

// TestParsePolicyJSONErrors: every mistake is refused naming the field.
func TestParsePolicyJSONErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown field", `{"weights": {"agee": 1}}`, `"agee"`},
		{"negative weight", `{"weights": {"fair_share": -1}}`, "weights.fair_share -1"},
		{"huge weight", `{"weights": {"age": 99999999999}}`, "weights.age"},
		{"wrong type", `{"weights": {"age": "high"}}`, "weights.age"},
		{"bad max_age", `{"max_age": "a week"}`, "max_age"},
		{"negative half_life", `{"half_life": "-1h"}`, "half_life -1h0m0s"},
		{"negative shares", `{"accounts": {"physics": {"shares": -5}}}`, `accounts[0] "physics": shares -5`},
		{"negative user shares", `{"accounts": {"physics": {"shares": 5, "users": {"al": -1}}}}`, `users[0] "al": shares -1`},
		{"empty account name", `{"accounts": {"": {"shares": 5}}}`, `accounts[0] "": name`},
		{"space in qos name", `{"qos": {"very high": 5}}`, `qos[0] "very high": name`},
		{"negative qos", `{"qos": {"high": -5}}`, `qos[0] "high": priority -5`},
		{"unknown scheduler", `{"scheduler": "sjf"}`, `scheduler "sjf": want shoal (the default) or qssf`},
		{"negative starve_after", `{"scheduler": "qssf", "starve_after": "-1h"}`, "starve_after -1h0m0s"},
		{"bad aging_half", `{"scheduler": "qssf", "aging_half": "an hour"}`, "aging_half"},
		{"two objects", `{} {}`, "one object"},
		{"not json", `weights: 1`, "policy:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicyJSON([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParsePolicyJSON(%s) = %v; want an error with %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestPolicyValidateOrder(t *testing.T) {
	p := Policy{QoS: []QoSLevel{{Name: "normal", Priority: 0}, {Name: "high", Priority: 1}}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "ascending") {
		t.Fatalf("Validate(unsorted qos) = %v; want an ascending-names error", err)
	}
	p = Policy{Accounts: []AccountShare{{Name: "a", Users: []UserShare{{"x", 1}, {"x", 2}}}}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "users[1]") {
		t.Fatalf("Validate(repeated user) = %v; want users[1] named", err)
	}
}

func TestSpecValidatePolicyFields(t *testing.T) {
	base := Spec{Command: []string{"true"}, Request: Request{Nodes: 1, TasksPerNode: 1}}
	for _, tc := range []struct {
		name string
		mod  func(*Spec)
		want string
	}{
		{"ok", func(s *Spec) { s.Account, s.QoS, s.Nice = "physics", "high", -5 }, ""},
		{"nice too big", func(s *Spec) { s.Nice = MaxNice + 1 }, "nice 2147483646"},
		{"nice too small", func(s *Spec) { s.Nice = -MaxNice - 1 }, "nice -2147483646"},
		{"account space", func(s *Spec) { s.Account = "a b" }, `account "a b"`},
		{"qos long", func(s *Spec) { s.QoS = strings.Repeat("q", 65) }, "qos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.mod(&s)
			err := s.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v; want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v; want an error with %q", err, tc.want)
			}
		})
	}
}

// FuzzParsePolicyJSON: any bytes give a valid canonical policy or an
// error, never a panic, and a parsed policy reads back from its file form.
func FuzzParsePolicyJSON(f *testing.F) {
	f.Add([]byte(`{"weights": {"age": 1000, "fair_share": 10000}, "max_age": "24h", "half_life": "0s",
		"accounts": {"physics": {"shares": 60, "users": {"alice": 2}}, "bio": {"shares": 40}}, "qos": {"high": 100}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"scheduler": "qssf", "starve_after": "240h", "aging_half": "1h"}`))
	f.Add([]byte(`{"scheduler": "shoal"}`))
	f.Add([]byte(`{"accounts": {"a": {"users": {"": 1}}}}`))
	f.Add([]byte(`{"weights": {"qos": 4294967296}, "qos": {"x": -1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicyJSON(b)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed policy does not validate: %v", err)
		}
		back, err := json.Marshal(p.File())
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParsePolicyJSON(back)
		if err != nil || !q.Equal(&p) {
			t.Fatalf("file form %s reads back as %+v, %v; want %+v", back, q, err, p)
		}
	})
}

// TestPolicyRanges: each bounded number of the policy is named, with its
// bounds and what 0 means, when it is out of range.
func TestPolicyRanges(t *testing.T) {
	for _, tc := range []struct {
		bad  func(p *Policy)
		want string
	}{
		{func(p *Policy) { p.Weights.QoS = -1 }, "weights.qos -1: want 0 to 4294967296"},
		{func(p *Policy) { p.Weights.Partition = 1 << 33 }, "weights.partition 8589934592: want 0 to 4294967296"},
		{func(p *Policy) { p.MinJobAge = -time.Second }, "min_job_age -1s: want 0 (the default, 5m0s) to 87600h0m0s"},
		{func(p *Policy) { p.StarveAfter = -time.Second }, "starve_after -1s: want 0 (the default, 240h) to 87600h0m0s"},
		{func(p *Policy) { p.AgingHalf = MaxPolicyDuration + 1 }, "aging_half 87600h0m0.000000001s: want 0 (the default, 1h) to 87600h0m0s"},
		{func(p *Policy) { p.OutputRetention = -time.Hour }, "output_retention -1h0m0s: want 0 (the default, 24h0m0s) to 87600h0m0s"},
		{func(p *Policy) { p.ArchiveMax = -1 }, "archive_max -1: want 0 (the default, 200000) to 10000000"},
		{func(p *Policy) { p.MaxSubmitJobs = MaxJobCountLimit + 1 }, "max_submit_jobs 10000001: want 0 (the default, 10000) to 10000000"},
		{func(p *Policy) { p.MaxJobCount = -1 }, "max_job_count -1: want 0 (the default, 100000) to 10000000"},
		{func(p *Policy) { p.MaxAge = -1 }, "max_age -1ns: want 0 to 87600h0m0s"},
		{func(p *Policy) { p.HalfLife = -1 }, "half_life -1ns: want 0 (no decay) to 87600h0m0s"},
		{func(p *Policy) { p.Accounts = []AccountShare{{Name: "bio", Shares: -1}} }, `accounts[0] "bio": shares -1: want 0 to 4294967296`},
		{func(p *Policy) {
			p.Accounts = []AccountShare{{Name: "bio", Users: []UserShare{{Name: "ada", Shares: -2}}}}
		},
			`accounts[0] "bio": users[0] "ada": shares -2: want 0 to 4294967296`},
		{func(p *Policy) { p.QoS = []QoSLevel{{Name: "high", Priority: -1}} }, `qos[0] "high": priority -1: want 0 to 4294967296`},
		{func(p *Policy) { p.QoS = []QoSLevel{{Name: "high", MaxGPUsPerUser: -1}} }, `qos[0] "high": max_gpus_per_user -1: want 0 (no cap) to 102400000`},
		{func(p *Policy) { p.PreemptGrace = -time.Minute }, "preempt_grace -1m0s: want 0 to 87600h0m0s"},
	} {
		p := DefaultPolicy()
		tc.bad(&p)
		if err := p.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("Validate() = %v; want %s", err, tc.want)
		}
	}
}
