package slurm

import (
	"errors"
	"strings"
	"testing"
)

// TestParseMPI: srun --mpi and SLURM_MPI_TYPE take what Debian's Slurm
// built with PMIx 4 lists on the peer (`srun --mpi=list`): pmix, none,
// pmi2 and pmix_v4; it refuses pmix_v3 ("Invalid MPI type 'pmix_v3'").
func TestParseMPI(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
		pmix          bool
	}{
		{in: "none", want: "none"},
		{in: "NONE", want: "none"},
		{in: "pmix", want: "pmix", pmix: true},
		{in: "pmix_v4", want: "pmix_v4", pmix: true},
		{in: "PMIx_V4", want: "pmix_v4", pmix: true},
		{in: "pmix_v3", err: "want one of pmix, none, pmi2, pmix_v4"}, // not in the peer's list
		{in: "pmi2", want: "pmi2"},
		{in: "PMI2", want: "pmi2"},
		{in: "pmi1", err: "want one of pmix, none, pmi2"},
		{in: "openmpi", err: "want one of pmix, none, pmi2, pmix_v4"},
		{in: "", err: "want one of"},
	} {
		got, err := ParseMPI(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseMPI(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseMPI(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err == "" && UsesPMIx(got) != tc.pmix:
			t.Errorf("UsesPMIx(%q) = %v; want %v", got, !tc.pmix, tc.pmix)
		}
	}
}

// TestSrunMPIOption: --mpi sets Options.MPI; --mpi=list answers with
// Slurm's list and runs nothing; pmi2 is taken; pmi1 is refused naming
// the option, as Slurm has no such plugin.
func TestSrunMPIOption(t *testing.T) {
	o, _, err := ParseArgs(Srun, []string{"--mpi=pmix", "prog"})
	if err != nil || o.MPI != "pmix" {
		t.Errorf("--mpi=pmix: MPI %q, %v; want pmix", o.MPI, err)
	}
	_, _, err = ParseArgs(Srun, []string{"--mpi=list", "prog"})
	var hr *HelpRequest
	if !errors.As(err, &hr) || hr.Text("") != MPIListText {
		t.Errorf("--mpi=list: %v; want the list", err)
	}
	if o, _, err = ParseArgs(Srun, []string{"--mpi=pmi2", "prog"}); err != nil || o.MPI != "pmi2" || UsesPMIx(o.MPI) {
		t.Errorf("--mpi=pmi2: MPI %q, %v; want pmi2", o.MPI, err)
	}
	if _, _, err = ParseArgs(Srun, []string{"--mpi=pmi1", "prog"}); err == nil || !strings.Contains(err.Error(), "--mpi") {
		t.Errorf("--mpi=pmi1: %v; want refused naming --mpi", err)
	}
	if _, _, err = ParseArgs(Sbatch, []string{"--mpi=pmix", "--wrap", "x"}); err == nil {
		t.Error("sbatch --mpi: accepted; it is srun's")
	}
}
