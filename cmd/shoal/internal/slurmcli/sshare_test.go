package slurmcli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// TestSshare: the tree's layout (root, accounts one space in, their users
// two), the rows each of -a, -u, -A and -U keeps, and the classic default,
// -l and -o formats with print_fields' widths (Slurm 22.05's
// src/sshare/process.c; the peer has no slurmdbd to make a golden).
func TestSshare(t *testing.T) {
	tree := []api.ShareAssoc{
		{Account: "bio", RawShares: 40, NormShares: 0.4, RawUsage: 300.7, EffectvUsage: 0.75, FairShare: 0.272627},
		{Account: "bio", User: "carol", RawShares: 1, NormShares: 0.4, RawUsage: 300.7, EffectvUsage: 0.75, FairShare: 0.272627},
		{Account: "physics", RawShares: 60, NormShares: 0.6, RawUsage: 100, EffectvUsage: 0.25, FairShare: 0.749154},
		{Account: "physics", User: "alice", RawShares: 2, NormShares: 0.4, RawUsage: 100, EffectvUsage: 0.25, FairShare: 0.648420},
		{Account: "physics", User: "bob", RawShares: 1, NormShares: 0.2, FairShare: 1},
	}
	for _, tc := range []struct {
		name   string
		format string
		q      sshareQuery
		layout sacctLayout
		want   string
	}{
		{"alice", sshareFormat, sshareQuery{users: []string{"alice"}}, sacctLayout{header: true}, "" +
			"Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n" +
			"-------------------- ---------- ---------- ----------- ----------- ------------- ---------- \n" +
			"root                                          1.000000         400      1.000000            \n" +
			" bio                                    40    0.400000         300      0.750000   0.272627 \n" +
			" physics                                60    0.600000         100      0.250000   0.749154 \n" +
			"  physics                 alice          2    0.400000         100      0.250000   0.648420 \n"},
		{"-a -P", sshareFormat, sshareQuery{all: true}, sacctLayout{header: true, parsable: true, delimiter: "|"}, "" +
			"Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare\n" +
			"root|||1.000000|400|1.000000|\n" +
			" bio||40|0.400000|300|0.750000|0.272627\n" +
			"  bio|carol|1|0.400000|300|0.750000|0.272627\n" +
			" physics||60|0.600000|100|0.250000|0.749154\n" +
			"  physics|alice|2|0.400000|100|0.250000|0.648420\n" +
			"  physics|bob|1|0.200000|0|0.000000|1.000000\n"},
		// LevelFS: physics has 0.6 of the shares and 0.25 of the usage;
		// alice 2/3 of physics' shares and all its usage; bob no usage.
		{"-A physics -u alice,bob -l -n -p", sshareLongFormat, sshareQuery{users: []string{"alice", "bob"}, accounts: []string{"physics"}}, sacctLayout{parsable: true, delimiter: "|", trailing: true}, "" +
			" physics||60|0.600000|100|0.250000|0.250000|0.749154|2.400000|||\n" +
			"  physics|alice|2|0.400000|100|0.250000|0.250000|0.648420|0.666667|||\n" +
			"  physics|bob|1|0.200000|0|0.000000|0.000000|1.000000|inf|||\n"},
		{"-U -a -o", "acc,u%-6,fairs", sshareQuery{all: true, usersOnly: true}, sacctLayout{}, "" +
			"  bio                carol    0.272627 \n" +
			"  physics            alice    0.648420 \n" +
			"  physics            bob      1.000000 \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols, err := parseSshareFormat(tc.format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			printSshare(&b, cols, sshareRows(tree, tc.q), tc.layout)
			if b.String() != tc.want {
				t.Errorf("sshare %s:\n%s\nwant:\n%s", tc.name, b.String(), tc.want)
			}
		})
	}
	for _, bad := range []string{"Account,Bogus", "", "User%x"} {
		if _, err := parseSshareFormat(bad); err == nil {
			t.Errorf("-o %q: no error", bad)
		}
	}
}

// TestSshareGolden: sshare's headers, widths and delimiters for each
// option set of testdata/sshare/cases.txt match what Debian's Slurm 22.05
// printed (golden.sh, run against the peer, which has no associations to
// list: the outputs are the header lines).
func TestSshareGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "sshare", "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		want, err := os.ReadFile(filepath.Join("testdata", "sshare", fmt.Sprintf("%02d.golden", n)))
		if err != nil {
			t.Fatal(err)
		}
		n++
		vals, _, err := parseCLI("sshare", sshareOpts, strings.Fields(line))
		if err != nil {
			t.Fatalf("sshare %s: %v", line, err)
		}
		format, layout, _ := sshareOptions(vals)
		cols, err := parseSshareFormat(format)
		if err != nil {
			t.Fatalf("sshare %s: %v", line, err)
		}
		var b bytes.Buffer
		printSshare(&b, cols, nil, layout)
		if b.String() != string(want) {
			t.Errorf("sshare %s:\n%q\nSlurm's:\n%q", line, b.String(), want)
		}
	}
	if n == 0 {
		t.Fatal("no cases in testdata/sshare/cases.txt")
	}
}
