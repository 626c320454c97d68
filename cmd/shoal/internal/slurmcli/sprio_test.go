package slurmcli

import (
	"bytes"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// TestSprioFormats: sprio's default, -l, -n, -u, -w and -o layouts, as
// Slurm 22.05's src/sprio/sprio.c builds the formats and print.c prints
// them (the peer runs priority/basic, where sprio refuses to run, so the
// layouts are derived from the source).
func TestSprioFormats(t *testing.T) {
	wt := cluster.Weights{Age: 1000, FairShare: 10000, QoS: 2000}
	ps := []api.Priority{
		{Job: 14, User: "light", Account: "physics", Priority: 10500, Age: 500, Fair: 10000, QoS: 0,
			Factors: api.PriorityFactor{Age: 0.5, FairShare: 1}},
		{Job: 9, User: "averyverylongname", Priority: 4250, Age: 250, Fair: 2000, QoS: 2000, Nice: 0, PartitionName: "gpu",
			Factors: api.PriorityFactor{Age: 0.25, FairShare: 0.2, QoS: 1}},
	}
	for _, tc := range []struct {
		name              string
		format            string
		users, norm, long bool
		header, weights   bool
		want              string
	}{
		{"default", "", false, false, false, true, false, "" +
			"          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE        QOS\n" +
			"             14 shoal          10500          0        500      10000          0\n" +
			"              9 gpu             4250          0        250       2000       2000\n"},
		{"-u", "", true, false, false, false, false, "" +
			"             14 shoal        light      10500          0        500      10000          0\n" +
			"              9 gpu       averyver       4250          0        250       2000       2000\n"},
		{"-n", "", false, true, false, true, false, "" +
			"          JOBID PARTITION PRIORITY   AGE        FAIRSHARE  QOS       \n" +
			"             14 shoal     0.00000244 0.5000000  1.0000000  0.0000000 \n" +
			"              9 gpu       0.00000098 0.2500000  0.2000000  1.0000000 \n"},
		{"-w", "", false, false, false, true, true, "" +
			"          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE        QOS\n" +
			"        Weights                               1       1000      10000       2000\n"},
		{"-l", "", false, false, true, true, false, "" +
			"          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION        QOS        NICE                 TRES\n" +
			"             14 shoal        light      10500          0        500          0      10000          0          0          0           0                     \n" +
			"              9 gpu       averyver       4250          0        250          0       2000          0          0       2000           0                     \n"},
		{"-o", "%i|%u|%F|%.3q", false, false, false, true, false, "" +
			"JOBID|USER|FAIRSHARE|QOS\n" +
			"14|light|10000|0.0\n" +
			"9|averyverylongname|2000|1.0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			format := tc.format
			if format == "" {
				format = sprioFormat(wt, tc.users, tc.norm, tc.long)
			}
			cols, err := parseSprioFormat(format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			printSprio(&b, cols, ps, wt, tc.header, tc.weights)
			if b.String() != tc.want {
				t.Errorf("sprio %s (%q):\n%s\nwant:\n%s", tc.name, format, b.String(), tc.want)
			}
		})
	}
	if _, err := parseSprioFormat("%i %Z"); err == nil {
		t.Error("-o %Z: no error; want Invalid job format specification")
	}
}
