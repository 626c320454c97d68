package slurm

import (
	"errors"
	"strings"
	"testing"
)

// TestGetopt is the scanner of every Slurm front-end (formerly the query
// commands' own parser, cmd/shoal/internal/slurmcli's parseCLI): permutation, prefixes,
// bundles, "--", and getopt's wording of each mistake.
func TestGetopt(t *testing.T) {
	opts := []Option{
		{Long: "user", Short: 'u', Arg: NeedArg},
		{Long: "noheader", Short: 'h', Arg: NoArg},
		{Long: "long", Short: 'l', Arg: NoArg},
		{Long: "states", Short: 't', Arg: NeedArg},
		{Long: "steps", Short: 's', Arg: OptArg},
	}
	scan := func(order Order, args []string) (string, []string, error) {
		var got []string
		rest, err := Getopt(opts, args, order, func(v OptValue) error {
			got = append(got, v.Opt.Long+"="+v.Value)
			return nil
		})
		return strings.Join(got, " "), rest, err
	}
	args := []string{"-hl", "-uada", "5", "--sta=R", "--user", "bob", "-t", "PD", "--", "-x"}
	got, rest, err := scan(Permute, args)
	if err != nil {
		t.Fatal(err)
	}
	if want := "noheader= long= user=ada states=R user=bob states=PD"; got != want {
		t.Errorf("Permute: options = %q; want %q", got, want)
	}
	if strings.Join(rest, " ") != "5 -x" {
		t.Errorf("Permute: operands = %q; want [5 -x]", rest)
	}
	got, rest, err = scan(RequireOrder, args)
	if err != nil || got != "noheader= long= user=ada" || strings.Join(rest, " ") != "5 --sta=R --user bob -t PD -- -x" {
		t.Errorf("RequireOrder: options %q, operands %q, %v; want it to stop at 5", got, rest, err)
	}
	if got, _, _ := scan(Permute, []string{"-s", "-s1", "--steps", "--steps=2"}); got != "steps= steps=1 steps= steps=2" {
		t.Errorf("optional argument: %q; want it taken only when attached", got)
	}
	for args, want := range map[string]string{
		"--bogus": "unrecognized option '--bogus'",
		"-z":      "invalid option -- 'z'",
		"-u":      "option requires an argument -- 'u'",
		"--user":  "option '--user' requires an argument",
		"--s":     "option '--s' is ambiguous; possibilities: '--states' '--steps'",
		"-h=x":    "invalid option -- '='",
		"--long=": "option '--long' doesn't allow an argument",
	} {
		_, _, err := scan(Permute, strings.Fields(args))
		var ue *UsageError
		if !errors.As(err, &ue) || err.Error() != want {
			t.Errorf("%s: err %v; want %q", args, err, want)
		}
	}
	stop := errors.New("stop")
	if _, err := Getopt(opts, []string{"-h", "-l"}, Permute, func(OptValue) error { return stop }); err != stop {
		t.Errorf("an error of the callback: %v; want it returned as is", err)
	}
}
