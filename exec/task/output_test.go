package task

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shoal-sched/shoal/exec/internal/exectest"
)

func TestOpenOutputFile(t *testing.T) {
	exectest.MustBeRoot(t)
	dir := exectest.UserDir(t)
	sec := exectest.Secret(t, dir, exectest.SecretText)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sec, link); err != nil {
		t.Fatal(err)
	}
	rootDir := t.TempDir() // 0700, root's
	tests := []struct {
		name    string
		path    string
		cred    *syscall.Credential
		wantErr string // "" : opened
		owner   uint32 // of a file opened
	}{
		{name: "new file as the user", path: filepath.Join(dir, "out"), cred: exectest.Nobody, owner: 65534},
		{name: "new file as the agent", path: filepath.Join(dir, "own"), owner: 0},
		{name: "root's file as the user", path: sec, cred: exectest.Nobody, wantErr: "as uid 65534: open " + sec + ": permission denied"},
		{name: "the shadow file as the user", path: "/etc/shadow", cred: exectest.Nobody, wantErr: "permission denied"},
		{name: "in a directory the user cannot enter", path: filepath.Join(rootDir, "out"), cred: exectest.Nobody, wantErr: "permission denied"},
		{name: "link to root's file as the user", path: link, cred: exectest.Nobody, wantErr: "symbolic link"},
		// Even where the open would be allowed, a link is not followed.
		{name: "link as the agent", path: link, wantErr: "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, o, err := OpenOutput("stdout", tt.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, tt.cred)
			if tt.wantErr != "" {
				if err == nil {
					f.Close()
					t.Fatalf("opened %s; want an error with %q", tt.path, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || o.Error != err.Error() {
					t.Errorf("err = %v, record %+v; want %q, recorded", err, o, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var st syscall.Stat_t
			if err := syscall.Stat(tt.path, &st); err != nil {
				t.Fatal(err)
			}
			if o.ID.Dev != uint64(st.Dev) || o.ID.Ino != uint64(st.Ino) || o.Error != "" || o.Path != tt.path {
				t.Errorf("record %+v; want device %d inode %d", o, st.Dev, st.Ino)
			}
			if st.Uid != tt.owner {
				t.Errorf("owner %d; want %d", st.Uid, tt.owner)
			}
			if (o.User == nil) != (tt.cred == nil) || o.User != nil && o.User.UID != tt.cred.Uid {
				t.Errorf("record's user %+v; want %+v", o.User, tt.cred)
			}
		})
	}
	if got := exectest.ReadFile(t, sec); got != exectest.SecretText {
		t.Errorf("root's file changed to %q", got)
	}
}
