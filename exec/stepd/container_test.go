package stepd

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/shoal-sched/shoal/exec/task"
)

// A bundle's config.json as `runc spec` writes it, cut down, with what a
// job's user must not get through it.
const specConfig = `{
	"ociVersion": "1.0.2",
	"process": {
		"terminal": true,
		"user": {"uid": 0, "gid": 0},
		"args": ["sh"],
		"env": ["PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm", "LANG=C.UTF-8"],
		"cwd": "/",
		"capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"], "ambient": ["CAP_KILL"]},
		"rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576}],
		"oomScoreAdj": -1000,
		"scheduler": {"policy": "SCHED_FIFO", "priority": 99},
		"ioPriority": {"class": "IOPRIO_CLASS_RT", "priority": 0},
		"noNewPrivileges": false
	},
	"root": {"path": "rootfs", "readonly": false},
	"hostname": "runc",
	"mounts": [
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/data", "type": "bind", "source": "/srv/data", "options": ["rbind", "rw", "suid", "dev"]}
	],
	"hooks": {"prestart": [{"path": "/bin/sh", "args": ["sh", "-c", "id > /tmp/pwned"]}]},
	"linux": {
		"resources": {"devices": [{"allow": false, "access": "rwm"}], "memory": {"limit": 1}},
		"cgroupsPath": "/somewhere",
		"devices": [{"path": "/dev/sda", "type": "b", "major": 8, "minor": 0, "fileMode": 438}],
		"intelRdt": {"closID": "guaranteed", "l3CacheSchema": "L3:0=7f0"},
		"namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "uts"}, {"type": "ipc"}, {"type": "network"}]
	}
}`

// TestOCIConfig: the rank's container runs its command, with its
// environment over the image's, in its working directory, as the job's
// user, under the cgroup path asked for and the bundle's root made
// absolute; the bundle's own limits are dropped; and for a user other
// than root nothing that raises privileges (hooks, devices,
// capabilities, rlimits, setuid or device files through bind mounts)
// is kept (DESIGN: tasks run as their user).
func TestOCIConfig(t *testing.T) {
	task := ociTask{
		Bundle: "/home/u/bundle", Args: []string{"python3", "train.py"},
		Env: []string{"PATH=/opt/bin:/bin", "SLURM_PROCID=3", "LANG=C"}, Cwd: "/home/u/work",
		UID: 1000, GID: 1000, Groups: []uint32{1000, 27}, Hostname: "n1", CgroupsPath: "shoal-n1-7-1-j-3",
		Mounts: []ociMount{{Source: "/home/u/work", Destination: "/home/u/work"}},
	}
	for _, tc := range []struct {
		name string
		mod  func(*ociTask)
		want func(t *testing.T, c map[string]any)
	}{{
		name: "user",
		want: func(t *testing.T, c map[string]any) {
			p := c["process"].(map[string]any)
			check(t, "process.args", p["args"], []any{"python3", "train.py"})
			check(t, "process.env", p["env"], []any{"PATH=/opt/bin:/bin", "TERM=xterm", "LANG=C", "SLURM_PROCID=3"})
			check(t, "process.cwd", p["cwd"], "/home/u/work")
			check(t, "process.terminal", p["terminal"], false)
			check(t, "process.user", p["user"], map[string]any{"uid": 1000.0, "gid": 1000.0, "additionalGids": []any{27.0}})
			check(t, "process.capabilities", p["capabilities"], map[string]any{})
			check(t, "process.noNewPrivileges", p["noNewPrivileges"], true)
			check(t, "process.rlimits", p["rlimits"], nil)
			check(t, "process.oomScoreAdj", p["oomScoreAdj"], nil)
			check(t, "process.scheduler", p["scheduler"], nil)
			check(t, "process.ioPriority", p["ioPriority"], nil)
			check(t, "linux.intelRdt", c["linux"].(map[string]any)["intelRdt"], nil)
			check(t, "root.path", c["root"].(map[string]any)["path"], "/home/u/bundle/rootfs")
			check(t, "hostname", c["hostname"], "n1")
			check(t, "hooks", c["hooks"], nil)
			l := c["linux"].(map[string]any)
			check(t, "linux.resources", l["resources"], nil)
			check(t, "linux.devices", l["devices"], nil)
			check(t, "linux.cgroupsPath", l["cgroupsPath"], "shoal-n1-7-1-j-3")
			check(t, "mounts", c["mounts"], []any{
				map[string]any{"destination": "/proc", "type": "proc", "source": "proc"},
				map[string]any{"destination": "/data", "type": "bind", "source": "/srv/data", "options": []any{"rbind", "rw", "nosuid", "nodev"}},
				map[string]any{"destination": "/home/u/work", "type": "bind", "source": "/home/u/work", "options": []any{"rbind", "nosuid", "nodev"}},
			})
		},
	}, {
		name: "root keeps the bundle's privileges",
		mod:  func(t *ociTask) { t.UID, t.GID, t.Groups, t.CgroupsPath = 0, 0, nil, "" },
		want: func(t *testing.T, c map[string]any) {
			p := c["process"].(map[string]any)
			check(t, "process.user", p["user"], map[string]any{"uid": 0.0, "gid": 0.0})
			check(t, "process.capabilities.bounding", p["capabilities"].(map[string]any)["bounding"], []any{"CAP_KILL"})
			if c["hooks"] == nil {
				t.Errorf("hooks dropped for root")
			}
			l := c["linux"].(map[string]any)
			check(t, "linux.cgroupsPath", l["cgroupsPath"], nil)
			check(t, "linux.resources", l["resources"], nil)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := task
			if tc.mod != nil {
				tc.mod(&in)
			}
			out, err := ociConfig([]byte(specConfig), in)
			if err != nil {
				t.Fatalf("ociConfig: %v", err)
			}
			var c map[string]any
			if err := json.Unmarshal(out, &c); err != nil {
				t.Fatalf("ociConfig's output: %v", err)
			}
			tc.want(t, c)
		})
	}
}

func check(t *testing.T, field string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v; want %#v", field, got, want)
	}
}

// TestOCIConfigBad: a config that is not an OCI bundle's is refused,
// naming what is wrong, and so is one that would give a user's job what
// only root's may have.
func TestOCIConfigBad(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"not json", `{`, "config.json: unexpected end of JSON input"},
		{"not an object", `[1]`, "config.json: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"null", `null`, "config.json: want a JSON object"},
		{"no root", `{"process": {}}`, "config.json: root.path: empty, want the bundle's root file system"},
		{"root not an object", `{"root": "rootfs"}`, "config.json: root.path: empty, want the bundle's root file system"},
		{"user namespace", `{"root": {"path": "r"}, "linux": {"namespaces": [{"type": "pid"}, {"type": "user"}], "uidMappings": [{"containerID": 1000, "hostID": 0, "size": 1}]}}`,
			"config.json: linux.namespaces: a user namespace is for jobs of root only (the container runs as the job's user)"},
		{"joined namespace", `{"root": {"path": "r"}, "linux": {"namespaces": [{"type": "mount", "path": "/proc/1/ns/mnt"}]}}`,
			"config.json: linux.namespaces: joining the mount namespace at /proc/1/ns/mnt is for jobs of root only"},
		{"block device mount", `{"root": {"path": "r"}, "mounts": [{"destination": "/disk", "type": "ext4", "source": "/dev/sda1"}]}`,
			`config.json: mounts: /disk of type "ext4" is for jobs of root only; want a bind or one of proc, sysfs, tmpfs, devpts, mqueue, cgroup, cgroup2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ociConfig([]byte(tc.config), ociTask{Bundle: "/b", Args: []string{"true"}, UID: 1000, GID: 1000})
			if err == nil || err.Error() != tc.want {
				t.Errorf("ociConfig(%s) = %v; want %s", tc.config, err, tc.want)
			}
		})
	}
}

// TestContainerID: ids are unique per node, job, incarnation, step and
// rank, in the characters runtimes accept.
func TestContainerID(t *testing.T) {
	for _, tc := range []struct {
		node string
		key  task.Key
		rank int
		want string
	}{
		{"n1", task.Key{Job: 7, Incarnation: 1, Step: task.NoStep}, 0, "shoal-n1-7-1-j-0"},
		{"n1", task.Key{Job: 7, Incarnation: 2, Step: 0}, 3, "shoal-n1-7-2-0-3"},
		{"gpu node/1", task.Key{Job: 1, Incarnation: 1, Step: 12}, 1, "shoal-gpu_node_1-1-1-12-1"},
	} {
		if got := ContainerID(tc.node, tc.key, tc.rank); got != tc.want {
			t.Errorf("ContainerID(%q, %v, %d) = %q; want %q", tc.node, tc.key, tc.rank, got, tc.want)
		}
	}
}

// FuzzOCIConfig: any bytes as config.json give an error or a config
// that parses again, never a panic.
func FuzzOCIConfig(f *testing.F) {
	f.Add([]byte(specConfig))
	f.Add([]byte(`{"root":{"path":"r"},"process":[],"linux":1,"mounts":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := ociConfig(b, ociTask{Bundle: "/b", Args: []string{"true"}, UID: 1000, GID: 1000, Mounts: []ociMount{{Source: "/w", Destination: "/w"}}})
		if err != nil {
			return
		}
		var c map[string]any
		if err := json.Unmarshal(out, &c); err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
	})
}
