// Shoal's web view: reads the HTTP API with the user's token and follows
// it with blocking queries (?index=N&wait=...). Every value from the
// cluster goes into the page as text (textContent), never as markup: job
// names and commands are the users'.
"use strict";

const TOKEN_KEY = "shoal-token";
const POLL_WAIT = "25s";
const RETRY_MS = 2000;
const GPU_REDRAW = "10s";

// The token may arrive in the fragment (#token=... or #/job/5&token=...),
// which the browser never sends to a server; keep it for this tab only.
function takeTokenFromFragment() {
  const m = location.hash.match(/[#&?]token=([^&]+)/);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  const rest = location.hash.replace(m[0], "").replace(/^#?&/, "#");
  history.replaceState(null, "", location.pathname + (rest && rest !== "#" ? rest : "#/"));
}

class HTTPError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

async function api(path) {
  const headers = {};
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (tok) headers.Authorization = "Bearer " + tok;
  const resp = await fetch(path, { headers, cache: "no-store" });
  const text = await resp.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = text; }
  if (!resp.ok) {
    throw new HTTPError(resp.status, (body && body.error) || resp.status + " " + resp.statusText);
  }
  return { data: body, index: Number(resp.headers.get("X-Shoal-Index") || 0) };
}

// el builds an element; strings and numbers become text nodes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "style") Object.assign(e.style, v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVG_NS = "http://www.w3.org/2000/svg";

// svg builds an SVG element; strings become text nodes.
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function pct(x) { return Math.round(x * 100) + "%"; }

function mib(bytes) { return Math.round(bytes / (1 << 20)) + " MiB"; }

// gpuChart draws one node's GPU utilization over a run (0 to 100 %).
function gpuChart(series) {
  const pts = series.points || [];
  if (!pts.length) return el("span", { class: "muted" }, "no samples yet");
  const W = 360, H = 60;
  const t0 = Date.parse(pts[0].time), t1 = Date.parse(pts[pts.length - 1].time);
  const span = Math.max(t1 - t0, 1);
  const xy = pts.map(p => [pts.length === 1 ? W / 2 : (Date.parse(p.time) - t0) / span * W, H - p.util * H]);
  const secs = Math.round((t1 - t0) / 1000);
  return svg("svg", { class: "gpu-chart", width: W, height: H + 14, viewBox: "0 0 " + W + " " + (H + 14), role: "img" },
    svg("title", {}, "GPU utilization over " + secs + " s, " + pts.length + " points of " + series.every + " sample(s)"),
    svg("line", { x1: 0, y1: H / 2, x2: W, y2: H / 2, class: "grid" }),
    svg("rect", { x: 0, y: 0, width: W, height: H, class: "frame" }),
    pts.length === 1
      ? svg("circle", { cx: xy[0][0], cy: xy[0][1], r: 2, class: "line" })
      : svg("polyline", { points: xy.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" "), class: "line" }),
    svg("text", { x: 0, y: H + 12, class: "axis" }, new Date(t0).toLocaleTimeString()),
    svg("text", { x: W, y: H + 12, class: "axis end" }, "+" + secs + " s"));
}

// gpuSection is a job's GPU use: per node, the summary recorded for the
// run (mean and peak) and the series over time its node sampled.
function gpuSection(j, series, err) {
  const usage = {};
  for (const t of j.tasks || []) if (t.gpu_usage) usage[t.node] = t.gpu_usage;
  const rows = [];
  const seen = {};
  for (const s of series) {
    const live = s.incarnation === j.incarnation;
    const u = live ? usage[s.node] : null;
    if (live) seen[s.node] = true;
    rows.push([s.node, String(s.incarnation),
      u ? pct(u.mean_util) : "", u ? pct(u.peak_util) : "", u ? mib(u.peak_mem_bytes) : "",
      s.error ? el("span", { class: "err" }, s.error) : gpuChart(s.series)]);
  }
  for (const [node, u] of Object.entries(usage)) {
    if (seen[node]) continue;
    rows.push([node, String(j.incarnation), pct(u.mean_util), pct(u.peak_util), mib(u.peak_mem_bytes),
      el("span", { class: "muted" }, "over time: only while the job is live")]);
  }
  if (err) rows.push(["", "", "", "", "", el("span", { class: "err" }, err)]);
  return section("GPU utilization", rows.length
    ? table(["Node", "Run", "Mean", "Peak", "Peak memory", "Over time"], rows)
    : el("p", { class: "muted" }, "No GPU samples for this job (it holds no GPUs, or it has not run yet)."));
}

function jobColour(id) {
  return "hsl(" + ((id * 137.508) % 360).toFixed(0) + " 55% 42%)";
}

function section(title, ...body) {
  return el("section", {}, el("h2", {}, title), ...body);
}

function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map(h => el("th", {}, h)))),
    el("tbody", {}, rows.map(r => el("tr", {}, r.map(c => el("td", {}, c))))));
}

function jobLink(j) {
  return el("a", { href: "#/job/" + j.id }, j.job_id_string || String(j.id));
}

// gpuOwners maps "node/gpu" to the job holding it.
function gpuOwners(jobs) {
  const owners = {};
  for (const j of jobs) {
    if (!["RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"].includes(j.state)) continue;
    for (const [node, gpus] of Object.entries(j.gpus || {})) {
      for (const g of gpus || []) owners[node + "/" + g] = j;
    }
  }
  return owners;
}

function gpuSquares(node, count, owners) {
  const squares = [];
  for (let g = 0; g < count; g++) {
    const j = owners[node + "/" + g];
    squares.push(el("span", {
      class: "gpu",
      title: j ? "GPU " + g + ": job " + j.id + " (" + j.name + ", " + j.user + ")" : "GPU " + g + ": free",
      "data-job": j ? String(j.id) : null,
      style: j ? { background: jobColour(j.id) } : null,
    }, j ? String(j.id % 100) : ""));
  }
  return el("div", { class: "gpus" }, squares);
}

// switchTree draws spines, their leaves and the nodes under each, every
// GPU coloured by the job holding it.
function switchTree(nodes, jobs) {
  const owners = gpuOwners(jobs);
  const spines = new Map();
  for (const n of nodes) {
    const spine = n.switch_parent || "(no spine)";
    const leaf = n.switch || "(no switch)";
    if (!spines.has(spine)) spines.set(spine, new Map());
    const leaves = spines.get(spine);
    if (!leaves.has(leaf)) leaves.set(leaf, []);
    leaves.get(leaf).push(n);
  }
  const out = [];
  for (const [spine, leaves] of [...spines].sort()) {
    const parts = [el("h3", {}, "spine " + spine)];
    for (const [leaf, ns] of [...leaves].sort()) {
      parts.push(el("div", { class: "muted" }, "switch " + leaf));
      parts.push(el("div", { class: "leaf" }, ns.map(n =>
        el("div", { class: "node " + String(n.state || "").toLowerCase(), "data-node": n.name },
          el("div", { class: "name" }, n.name),
          el("div", { class: "meta" }, n.state + (n.raft && n.raft !== "none" ? " · raft " + n.raft : "")),
          el("div", { class: "meta" }, (n.gpus - n.gpus_free) + "/" + n.gpus + " GPUs · " + n.cpus_alloc + "/" + n.cpus + " CPUs"),
          n.reason ? el("div", { class: "meta err" }, n.reason) : null,
          gpuSquares(n.name, n.gpus, owners)))));
    }
    out.push(el("div", { class: "spine" }, parts));
  }
  return out.length ? out : [el("p", { class: "muted" }, "No nodes yet.")];
}

async function overview() {
  const [status, nodes, jobs, members] = await Promise.all([
    api("/v1/status"), api("/v1/nodes"), api("/v1/jobs"), api("/v1/members"),
  ]);
  const st = status.data;
  setStatus(st.name + " · leader " + (st.leader || "none") + " · index " + st.applied_index);
  const live = jobs.data.slice().sort((a, b) => a.id - b.id);
  const pending = live.filter(j => j.state === "PENDING");
  const roles = Object.fromEntries(nodes.data.map(n => [n.name, n.raft]));
  return {
    index: Math.max(nodes.index, jobs.index),
    body: [
      section("Nodes by switch", el("div", { class: "legend" },
        el("span", {}, el("i", { style: { background: "var(--free)" } }), "free GPU"),
        el("span", {}, "coloured: held by the job shown")),
        switchTree(nodes.data, live)),
      section("Queue (" + live.length + " jobs, " + pending.length + " pending)",
        live.length ? table(["Job", "Name", "User", "State", "Reason", "Nodes", "GPUs/node", "Submitted"],
          live.map(j => [jobLink(j), j.name, j.user, j.state, j.reason || "", (j.nodes || []).join(","),
            String(j.gpus_per_node), j.submit_time || ""]))
          : el("p", { class: "muted" }, "No live jobs.")),
      section("Membership",
        table(["Node", "Gossip", "Raft", "Address", "GPUs", "Switch", "Version"],
          members.data.map(m => [m.name, m.status, roles[m.name] || "none", m.api_address, String(m.gpus), m.switch, m.version]))),
    ],
  };
}

function lastLines(s, n) {
  const lines = s.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  return lines.slice(-n).join("\n");
}

// listOrError fetches a list that the page can show without: [list, null],
// or [[], the error's message].
async function listOrError(path) {
  try {
    return [(await api(path)).data || [], null];
  } catch (e) {
    return [[], e.message];
  }
}

async function jobPage(id) {
  const job = await api("/v1/jobs/" + encodeURIComponent(id));
  const j = job.data;
  setStatus("job " + (j.job_id_string || j.id) + " · " + j.state);
  const [gpu, gpuErr] = await listOrError("/v1/jobs/" + encodeURIComponent(id) + "/gpu");
  const [logs, logErr] = await listOrError("/v1/jobs/" + encodeURIComponent(id) + "/logs");
  const facts = [
    ["State", j.state + (j.reason ? " (" + j.reason + ")" : "")],
    ["Reason detail", j.reason_detail || ""],
    ["User", j.user], ["Name", j.name],
    ["Command", (j.command || []).join(" ") || (j.batch ? "(batch script)" : "")],
    ["Nodes", String(j.num_nodes) + " × " + j.gpus_per_node + " GPUs, " + j.tasks_per_node + " tasks/node"],
    ["Partition", j.partition || ""], ["Account", j.account || ""], ["QoS", j.qos || ""],
    ["Submitted", j.submit_time || ""], ["Started", j.start_time || ""], ["Ended", j.end_time || ""],
    ["Exit code", String(j.exit_code)], ["Restarts", String(j.restart_count)],
  ].filter(([, v]) => v !== "");
  const owners = {};
  for (const t of j.tasks || []) for (const g of t.gpus || []) owners[t.node + "/" + g] = j;
  const out = [];
  for (const c of logs) {
    const head = c.node + " rank " + c.rank + (c.step >= 0 ? " step " + c.step : "") + " " + c.stream;
    out.push(c.error ? head + ": " + c.error : "== " + head + "\n" + lastLines(c.data || "", 40));
  }
  return {
    index: job.index,
    // A running job's GPU samples move without the cluster's state: draw
    // the page again at least this often.
    wait: j.state === "RUNNING" ? GPU_REDRAW : POLL_WAIT,
    body: [
      section("Job " + (j.job_id_string || j.id) + " — " + j.name, table(["", ""], facts)),
      section("Placement", (j.tasks || []).length
        ? table(["Node", "GPUs", "CPUs", "Memory (MiB)", "Task state", "Exit"],
          j.tasks.map(t => [t.node, gpuSquares(t.node, Math.max(0, ...(t.gpus || []).map(g => g + 1)), owners),
            t.cpus || "", t.mem_mib ? String(t.mem_mib) : "", t.state, String(t.exit_code)]))
        : el("p", { class: "muted" }, "Not placed yet.")),
      (j.steps || []).length ? section("Steps", table(["Step", "Name", "State", "Nodes", "Tasks", "Exit"],
        j.steps.map(s => [String(s.id), s.name, s.state, (s.nodes || []).join(","), String(s.ntasks), String(s.exit_code)]))) : null,
      gpuSection(j, gpu, gpuErr),
      section("Output (last 40 lines of each rank)",
        logErr ? el("p", { class: "err" }, logErr) : el("pre", {}, out.join("\n") || "(no output yet)")),
    ],
  };
}

function setStatus(s) { document.getElementById("status").textContent = s; }

function route() {
  const m = location.hash.match(/^#\/job\/([0-9_]+)/);
  return m ? () => jobPage(m[1]) : overview;
}

// render draws the current route, then waits for the state to move past
// what it drew (a blocking query) and draws again; a new route or a newer
// render supersedes it.
let generation = 0;
async function render() {
  const gen = ++generation;
  const view = document.getElementById("view");
  for (;;) {
    let index = 0;
    let wait = POLL_WAIT;
    try {
      const page = await route()();
      if (gen !== generation) return;
      view.replaceChildren(...page.body.filter(Boolean));
      view.dataset.state = "ready";
      index = page.index;
      wait = page.wait || POLL_WAIT;
    } catch (e) {
      if (gen !== generation) return;
      if (e instanceof HTTPError && e.status === 401) {
        showLogin(e.message);
        return;
      }
      view.replaceChildren(el("section", {}, el("p", { class: "err" }, e.message)));
      view.dataset.state = "error";
      await new Promise(r => setTimeout(r, RETRY_MS));
      continue;
    }
    try {
      await api("/v1/jobs?index=" + index + "&wait=" + wait);
    } catch (e) {
      await new Promise(r => setTimeout(r, RETRY_MS));
    }
    if (gen !== generation) return;
  }
}

function showLogin(msg) {
  const view = document.getElementById("view");
  view.replaceChildren(el("section", {},
    el("p", {}, "This view needs a user token (", el("code", {}, "shoal token create --user NAME"), ")."),
    msg ? el("p", { class: "err" }, msg) : null));
  view.dataset.state = "login";
  setStatus("not signed in");
  document.getElementById("login").hidden = false;
}

function init() {
  takeTokenFromFragment();
  const login = document.getElementById("login");
  const logout = document.getElementById("logout");
  logout.hidden = !sessionStorage.getItem(TOKEN_KEY);
  login.addEventListener("submit", ev => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    login.hidden = true;
    logout.hidden = false;
    render();
  });
  logout.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    logout.hidden = true;
    render();
  });
  window.addEventListener("hashchange", render);
  render();
}

document.addEventListener("DOMContentLoaded", init);
