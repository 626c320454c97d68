// Package exitcode is the error that carries only a process exit code,
// shared by cmd/shoal and its Slurm front-ends (cmd/shoal/internal/slurmcli):
// a command that has already printed its message returns a Code, and
// main exits with it and prints nothing more.
package exitcode

import (
	"errors"
	"fmt"
)

// Code is an error that only carries a process exit code (its message
// was already printed).
type Code int

func (e Code) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Message is what to print for err: nothing for none, or for an error
// that only carries an exit code.
func Message(err error) string {
	var ec Code
	if err == nil || errors.As(err, &ec) {
		return ""
	}
	return err.Error()
}
