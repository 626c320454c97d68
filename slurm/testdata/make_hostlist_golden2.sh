#!/usr/bin/env bash
# make_hostlist_golden2.sh: run Debian's Slurm (22.05, the peer in
# shared/peers/slurm) on every line of hostlist_cases2.txt and write
# hostlist_golden2.json, in the format of shared/peers/slurm's
# hostlist_golden.json: for each expression the stdout, stderr and exit
# status of `scontrol show hostnames EXPR`, `show hostlist EXPR` and
# `show hostlistsorted EXPR`. scontrol needs no daemon for these, only a
# readable slurm.conf: bring the peer up once (shared/peers/slurm/up.sh)
# or point SLURM_CONF at any valid one.
#
#   SLURM_CONF=/tmp/slurmpeer/etc/slurm.conf slurm/testdata/make_hostlist_golden2.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SLURM_CONF:=/tmp/slurmpeer/etc/slurm.conf}"
export SLURM_CONF
command -v scontrol >/dev/null || { echo "make_hostlist_golden2: no scontrol (apt-get install slurm-client)" >&2; exit 1; }
[ -r "$SLURM_CONF" ] || { echo "make_hostlist_golden2: $SLURM_CONF unreadable (run shared/peers/slurm/up.sh)" >&2; exit 1; }
python3 - "$HERE/hostlist_cases2.txt" "$HERE/hostlist_golden2.json" <<'PY'
import hashlib, json, os, subprocess, sys
cases_path, out_path = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") or k == "SLURM_CONF"}
def run(*args, extra=None):
    e = dict(env)
    e.update(extra or {})
    p = subprocess.run(["scontrol", *args], capture_output=True, text=True, env=e, timeout=60)
    r = {"rc": p.returncode, "stderr": p.stderr}
    lines = p.stdout.splitlines()
    if len(lines) > 50:
        r.update(stdout_lines=len(lines), stdout_head=lines[:3], stdout_tail=lines[-3:],
                 stdout_sha256=hashlib.sha256(p.stdout.encode()).hexdigest())
    else:
        r["stdout"] = p.stdout
    return r
version = subprocess.run(["scontrol", "--version"], capture_output=True, text=True).stdout.strip()
cases = []
with open(cases_path) as f:
    for raw in f:
        line = raw.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        c = {}
        if line.startswith("<NOARG") and line.endswith(">"):
            extra = dict(kv.partition("=")[::2] for kv in line[len("<NOARG"):-1].split())
            c = {"expr": None, "argv": "none", "env": extra}
            for sub in ("hostnames", "hostlist", "hostlistsorted"):
                c[sub] = run("show", sub, extra=extra)
        else:
            c = {"expr": line}
            for sub in ("hostnames", "hostlist", "hostlistsorted"):
                c[sub] = run("show", sub, line)
        cases.append(c)
doc = {
    "slurm_version": version,
    "made_by": "slurm/testdata/make_hostlist_golden2.sh from hostlist_cases2.txt",
    "note": ("EXPR is passed as one argv element; expr null means no argument with the "
             "variables in env set (every other SLURM_* but SLURM_CONF unset); stdout over "
             "50 lines is stored as stdout_lines/head/tail/sha256"),
    "cases": cases,
}
with open(out_path, "w") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
PY
echo "wrote $HERE/hostlist_golden2.json" >&2
