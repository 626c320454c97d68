package slurm

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goldenDir holds the real Slurm's outputs; CI has shared/ beside the repo.
var goldenDir = filepath.Join("..", "..", "shared", "peers", "slurm")

type scontrolRun struct {
	RC          int      `json:"rc"`
	Stderr      string   `json:"stderr"`
	Stdout      *string  `json:"stdout"`
	StdoutLines int      `json:"stdout_lines"`
	StdoutHead  []string `json:"stdout_head"`
	StdoutTail  []string `json:"stdout_tail"`
	StdoutSHA   string   `json:"stdout_sha256"`
}

type goldenCase struct {
	Expr       *string     `json:"expr"`
	Hostnames  scontrolRun `json:"hostnames"`
	Hostlist   scontrolRun `json:"hostlist"`
	Sorted     scontrolRun `json:"hostlistsorted"`
	OfExpanded *struct {
		Input string `json:"input"`
		scontrolRun
	} `json:"hostlist_of_expansion"`
}

// slurmDivergences are the golden expressions Shoal deliberately rejects
// although Slurm accepts them, with the reason.
var slurmDivergences = map[string]string{
	"n[1-":  "Slurm turns an unclosed bracket into the host \"n]\"",
	"n[1-2": "Slurm turns an unclosed bracket into the host \"n]\"",
}

func loadGolden(t *testing.T) []goldenCase {
	t.Helper()
	return loadGoldenFile(t, filepath.Join(goldenDir, "hostlist_golden.json"))
}

func loadGoldenFile(t *testing.T, path string) []goldenCase {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden hostlists from the real Slurm: %v", err)
	}
	var doc struct {
		Cases []goldenCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.Cases
}

// TestGoldenCasesFile checks that hostlist_golden.json covers every line of
// hostlist_cases.txt, so no case is silently skipped.
func TestGoldenCasesFile(t *testing.T) {
	f, err := os.Open(filepath.Join(goldenDir, "hostlist_cases.txt"))
	if err != nil {
		t.Fatalf("golden hostlist cases: %v", err)
	}
	defer f.Close()
	have := map[string]bool{}
	for _, c := range loadGolden(t) {
		if c.Expr != nil {
			have[*c.Expr] = true
		}
	}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "<NOARG") {
			continue
		}
		if line == "<EMPTY>" {
			line = ""
		}
		n++
		if !have[line] {
			t.Errorf("case %q of hostlist_cases.txt has no golden result", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Errorf("hostlist_cases.txt: %d cases; want the full set (40 or more)", n)
	}
}

func checkNames(t *testing.T, what string, got []string, want scontrolRun) {
	t.Helper()
	if want.Stdout != nil {
		if w := strings.Fields(*want.Stdout); !slices.Equal(got, w) {
			t.Errorf("%s = %q; want %q", what, got, w)
		}
		return
	}
	sum := sha256.Sum256([]byte(strings.Join(got, "\n") + "\n"))
	if len(got) != want.StdoutLines || hex.EncodeToString(sum[:]) != want.StdoutSHA {
		t.Errorf("%s = %d names (%q...); want %d names %q...%q", what, len(got), got[:min(3, len(got))], want.StdoutLines, want.StdoutHead, want.StdoutTail)
	}
}

// TestExpandCompressGolden runs every expression Slurm 22.05 was given
// through ExpandHostlist, CompressHostlist and SortedHostlist and compares
// with what `scontrol show hostnames`, `hostlist` and `hostlistsorted`
// printed.
func TestExpandCompressGolden(t *testing.T) {
	checkGolden(t, loadGolden(t), slurmDivergences)
}

// checkGolden compares Shoal's hostlist functions with Slurm's outputs;
// divergences are the expressions Shoal refuses on purpose.
func checkGolden(t *testing.T, cases []goldenCase, divergences map[string]string) {
	t.Helper()
	for _, c := range cases {
		if c.Expr == nil {
			continue // no argument: reading SLURM_NODELIST is the caller's business
		}
		expr := *c.Expr
		t.Run(expr, func(t *testing.T) {
			got, err := ExpandHostlist(expr)
			slurmValid := !strings.Contains(c.Hostnames.Stderr, "Invalid hostlist")
			if why, ok := divergences[expr]; ok {
				if err == nil {
					t.Errorf("ExpandHostlist(%q) = %q; want an error (deliberate divergence: %s)", expr, got, why)
				}
				return
			}
			if !slurmValid {
				if err == nil {
					t.Errorf("ExpandHostlist(%q) = %q; want an error, as Slurm: %s", expr, got, c.Hostnames.Stderr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ExpandHostlist(%q) error %v; want names, as Slurm", expr, err)
			}
			checkNames(t, "ExpandHostlist("+expr+")", got, c.Hostnames)
			if c.Hostlist.Stdout != nil {
				if cg, want := CompressHostlist(got)+"\n", *c.Hostlist.Stdout; cg != want {
					t.Errorf("CompressHostlist(ExpandHostlist(%q)) = %q; want %q", expr, cg, want)
				}
			}
			if c.Sorted.Stdout != nil {
				if sg, want := SortedHostlist(got)+"\n", *c.Sorted.Stdout; sg != want {
					t.Errorf("SortedHostlist(ExpandHostlist(%q)) = %q; want %q (scontrol show hostlistsorted)", expr, sg, want)
				}
			}
			if e := c.OfExpanded; e != nil && e.Stdout != nil {
				names, err := ExpandHostlist(e.Input)
				if err != nil {
					t.Fatalf("ExpandHostlist(%q) error %v", e.Input, err)
				}
				if cg, want := CompressHostlist(names)+"\n", *e.Stdout; cg != want {
					t.Errorf("CompressHostlist(%q) = %q; want %q", e.Input, cg, want)
				}
			}
		})
	}
}

// slurmDivergences2 are the expressions of testdata/hostlist_cases2.txt
// Shoal refuses although Slurm 22.05 accepts them, with the reason.
var slurmDivergences2 = map[string]string{
	"n[1-]":                   "Slurm reads a missing high bound as the low one",
	"n[[1]":                   "Slurm makes the host \"n[1\" of a doubled bracket",
	"n[18446744073709551616]": "Slurm saturates a number past 64 bits to 18446744073709551615",
	"n[99999999999999999999]": "Slurm saturates a number past 64 bits to 18446744073709551615",
	"n[1 - 3]":                "Slurm counts a space as a digit of the width (n01..n03)",
	"n[ 1-3]":                 "Slurm counts a space as a digit of the width (n01..n03)",
	"n[1, 3]":                 "Slurm counts a space as a digit of the width (n1,n03)",
}

// slurmDiffers2 are the expressions of testdata/hostlist_cases2.txt Shoal
// accepts with other names or another compressed form than Slurm 22.05's,
// on purpose; Shoal must still accept them.
var slurmDiffers2 = map[string]string{
	"n[18446744073709551614-18446744073709551615]": "Slurm's show hostnames crashes (SIGSEGV) on it",
	"n18446744073709551615,n18446744073709551616":  "Slurm renames the host past 64 bits n18446744073709551615",
	"n[1-2][3-4]": "Slurm keeps the bracket structure (n1[3-4],n2[3-4]); Shoal compresses the " +
		"names n13,n14,n23,n24 as `scontrol show hostlist n13,n14,n23,n24` does",
}

// TestExpandCompressGolden2 is TestExpandCompressGolden on the edge cases
// of testdata/hostlist_cases2.txt (malformed brackets, suffixes, large
// numbers, leading zeros, empty and reversed ranges, whitespace), whose
// outputs from Debian's Slurm make_hostlist_golden2.sh recorded.
func TestExpandCompressGolden2(t *testing.T) {
	var cases []goldenCase
	for _, c := range loadGoldenFile(t, filepath.Join("testdata", "hostlist_golden2.json")) {
		if c.Expr != nil {
			if why, ok := slurmDiffers2[*c.Expr]; ok {
				if _, err := ExpandHostlist(*c.Expr); err != nil {
					t.Errorf("ExpandHostlist(%q): %v; want names (Shoal differs from Slurm on purpose: %s)", *c.Expr, err, why)
				}
				continue
			}
		}
		cases = append(cases, c)
	}
	checkGolden(t, cases, slurmDivergences2)
}
