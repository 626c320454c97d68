package slurmcli

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is salloc's controlling terminal when it runs its command
// interactively, as Slurm's salloc does when its stdin is a terminal and
// salloc is in the terminal's foreground process group: the command (the
// user's shell) runs in a process group of its own that salloc makes the
// foreground one, so that Ctrl-C, Ctrl-Z and Ctrl-\ reach the shell and
// its jobs, never salloc; when the command ends, salloc takes the
// terminal back.
type terminal struct {
	fd   int
	pgrp int // salloc's own process group
}

// foregroundTerminal returns stdin's terminal if salloc is in its
// foreground process group, and false otherwise (not a terminal, or
// salloc runs in the background: then the command shares salloc's
// process group, as in a script).
func foregroundTerminal() (*terminal, bool) {
	fd := int(os.Stdin.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil {
		return nil, false
	}
	if pgrp := unix.Getpgrp(); fg == pgrp {
		return &terminal{fd: fd, pgrp: pgrp}, true
	}
	return nil, false
}

// procAttr is what the command starts with: a process group of its own.
func (t *terminal) procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// give makes the command's process group (its pid) the terminal's
// foreground one. salloc is still in the foreground, so no SIGTTOU; a
// shell that looked at the terminal before this and stopped itself with
// SIGTTIN (bash waits so to be in the foreground) is continued.
func (t *terminal) give(pid int) error {
	if err := unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pid); err != nil {
		return err
	}
	return unix.Kill(-pid, unix.SIGCONT)
}

// takeBack makes salloc's process group the foreground one again. salloc
// is in the background then: SIGTTOU, which would stop it, is ignored
// from now on (the command has ended: nothing inherits it).
func (t *terminal) takeBack() {
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
	_ = unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, t.pgrp)
}
