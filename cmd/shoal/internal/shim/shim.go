// Package shim is what both binaries share to play the Slurm commands:
// which names they answer to, how a command runs and exits, and how the
// CLI finds the agent to talk to. The full shoal binary (cmd/shoal) and
// the small shoal-slurm (cmd/shoal/shim, slurm.ShimBinary) both call Run;
// the small one links nothing of the agent, so it starts fast.
package shim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
	"github.com/shoal-sched/shoal/pki"
	"github.com/shoal-sched/shoal/slurm"
)

// Names are the Slurm commands played when a binary is invoked under
// their name (a link made by install-shims, or the agent's shim directory
// on a batch script's PATH): slurm.Commands.
var Names = func() []string {
	names := make([]string, len(slurm.Commands))
	for i, c := range slurm.Commands {
		names[i] = string(c)
	}
	return names
}()

// Is reports whether argv0 names a Slurm command, and which.
func Is(argv0 string) (string, bool) {
	base := filepath.Base(argv0)
	if slices.Contains(Names, base) {
		return base, true
	}
	return "", false
}

// commands are the Slurm commands that exit 1 on any error and 0
// otherwise, by name; Run plays sbatch, srun and salloc, whose exit codes
// say more, itself.
var commands = map[string]func(ctx context.Context, connect slurmcli.Connect, args []string, stdout, stderr io.Writer) error{
	"scontrol": func(ctx context.Context, connect slurmcli.Connect, args []string, stdout, _ io.Writer) error {
		return slurmcli.Scontrol(ctx, connect, args, stdout)
	},
	"scancel": func(ctx context.Context, connect slurmcli.Connect, args []string, _, stderr io.Writer) error {
		return slurmcli.Scancel(ctx, connect, args, stderr)
	},
	"squeue":   slurmcli.Squeue,
	"sbcast":   slurmcli.Sbcast,
	"sinfo":    slurmcli.Sinfo,
	"sacct":    slurmcli.Sacct,
	"sprio":    slurmcli.Sprio,
	"sacctmgr": slurmcli.Sacctmgr,
	"sshare":   slurmcli.Sshare,
	"sreport":  slurmcli.Sreport,
}

// Run runs Slurm command name with its own argument syntax and returns
// the process exit code; version is what --version prints.
func Run(ctx context.Context, connect slurmcli.Connect, name string, args []string, version string, stdout, stderr io.Writer) int {
	var code int
	var err error
	switch name {
	case "sbatch":
		err = slurmcli.Sbatch(ctx, connect, args, stdout)
		var ec exitcode.Code
		switch {
		case errors.As(err, &ec): // sbatch --wait: the job's exit code
			code = int(ec)
		case err != nil:
			code = 1
		}
	case "srun":
		code, err = slurmcli.Srun(ctx, connect, args, stdout, stderr)
	case "salloc":
		code, err = slurmcli.Salloc(ctx, connect, args, stderr)
	default:
		run, ok := commands[name]
		if !ok {
			err, code = fmt.Errorf("unknown command %q", name), 1
			break
		}
		if err = run(ctx, connect, args, stdout, stderr); err != nil {
			code = 1
		}
	}
	if hr := (*slurm.HelpRequest)(nil); errors.As(err, &hr) {
		// --help, --usage, --version: answered, and nothing runs.
		fmt.Fprint(stdout, hr.Text(version))
		return 0
	}
	if msg := exitcode.Message(err); msg != "" {
		fmt.Fprintf(stderr, "%s: error: %s\n", name, msg)
	}
	return code
}

// TakeGlobalFlags takes the leading --addr and --data-dir (with their
// value as the next word or after =) off args into t, as `shoal slurm`
// and shoal-slurm accept them before the command's name.
func TakeGlobalFlags(t *Target, args []string) ([]string, error) {
	for len(args) > 0 {
		var name, value string
		switch a := args[0]; {
		case a == "--addr" || a == "--data-dir":
			if len(args) < 2 {
				return nil, fmt.Errorf("%s: want a value", a)
			}
			name, value, args = a, args[1], args[2:]
		case strings.HasPrefix(a, "--addr=") || strings.HasPrefix(a, "--data-dir="):
			name, value, _ = strings.Cut(a, "=")
			args = args[1:]
		default:
			return args, nil
		}
		if name == "--addr" {
			t.Addr = value
		} else {
			t.DataDir = value
		}
	}
	return args, nil
}

// Target is the agent a CLI call talks to, as the global flags name it
// (empty fields take their defaults from the environment).
type Target struct {
	Addr    string
	DataDir string
	// Token is a user token for a remote agent (default $SHOAL_TOKEN).
	Token string
}

// DefaultDataDir is --data-dir's default: $SHOAL_DATA_DIR or ./shoal-data.
func DefaultDataDir() string {
	if d := os.Getenv("SHOAL_DATA_DIR"); d != "" {
		return d
	}
	return "shoal-data"
}

// SystemSocket is where the systemd unit's agent listens.
const SystemSocket = "/run/shoal/shoal.sock"

// Client finds the agent to talk to: --addr; else the Unix socket of the
// local agent's data dir when one exists; else $SHOAL_ADDR; else the
// default HTTP address. Over the socket the agent learns who we are from
// the kernel; over TCP nothing we could declare would be believed, so
// only what needs no identity (status, leader) works there.
func (t Target) Client() (*api.Client, error) {
	addr := t.Addr
	if addr == "" {
		dir := t.DataDir
		if dir == "" {
			dir = DefaultDataDir()
		}
		sock := filepath.Join(dir, "shoal.sock")
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			addr = "unix://" + sock
		}
	}
	if addr == "" {
		addr = os.Getenv("SHOAL_ADDR")
	}
	if addr == "" {
		// A packaged agent (contrib/systemd) keeps its socket in /run.
		addr = "unix://" + filepath.Join(DefaultDataDir(), "shoal.sock")
		if st, err := os.Stat(SystemSocket); err == nil && st.Mode()&os.ModeSocket != 0 {
			addr = "unix://" + SystemSocket
		}
	}
	var tlsConf *tls.Config
	if strings.HasPrefix(addr, "https://") {
		var err error
		if tlsConf, err = userTLS(); err != nil {
			return nil, err
		}
	}
	c, err := api.NewTLSClient(addr, tlsConf)
	if err != nil {
		return nil, fmt.Errorf("--addr: %w", err)
	}
	token := t.Token
	if token == "" {
		token = os.Getenv("SHOAL_TOKEN")
	}
	if token != "" && tlsConf != nil {
		// Only over TLS: a token sent in the clear is anyone's.
		c = c.WithToken(token)
	}
	return c, nil
}

// userTLS is how the CLI verifies an agent's HTTPS API: against the
// cluster CA in $SHOAL_CA_CERT, else the local data dir's.
func userTLS() (*tls.Config, error) {
	path := os.Getenv("SHOAL_CA_CERT")
	if path == "" {
		path = pki.DefaultPaths(DefaultDataDir()).CA
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("https needs the cluster CA certificate: set $SHOAL_CA_CERT: %w", err)
	}
	certs, err := pki.ParseCerts(data)
	if err != nil {
		return nil, fmt.Errorf("$SHOAL_CA_CERT %s: %w", path, err)
	}
	roots := x509.NewCertPool()
	for _, c := range certs {
		roots.AddCert(c)
	}
	return pki.UserClientConfig(roots), nil
}
