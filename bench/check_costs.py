#!/usr/bin/env python3
"""ctest rig_bench_reports_the_costs_of_each_figure: runs rig-bench briefly (its own agent) and
checks that every handover and copy figure carries its cost figures (docs/TUNING.md, "Reading
the cost figures"): the submitting threads and the receiving thread with CPU time and system
calls, the agent's side from its status query, batch sizes, TCP segments each way; and that
the JSON names the commit and the machine. Usage: check_costs.py RIG_BENCH JSON_PATH"""
import json
import subprocess
import sys

bench, path = sys.argv[1], sys.argv[2]
run = subprocess.run([bench, "--min-time", "0.02", "--max-size", "1MiB", "--batch-bytes", "1MiB",
                      "--rtt-count", "50", "--pipeline", "64", "--threads", "2", "--json", path],
                     capture_output=True, text=True, timeout=240)
if run.returncode != 0:
    sys.exit(f"rig-bench exited {run.returncode}:\n{run.stderr}")
if "costs per operation" not in run.stdout:
    sys.exit("no cost table in rig-bench's output:\n" + run.stdout)
j = json.load(open(path))
problems = []
if not j.get("commit"):
    problems.append("no commit")
if not j["machine"].get("nproc") or not j["machine"].get("kernel"):
    problems.append("no machine")
settings = j.get("agent_settings")
if not isinstance(settings, dict) or "gather_us" not in settings or "backend" not in settings:
    problems.append(f"no agent_settings from the agent's status query: {settings!r}")
names = {f["name"] for f in j["figures"]}
for wanted in ("handover_rtt_p50", "handover_rate_1", "handover_rate_threads", "h2d", "d2h"):
    if wanted not in names:
        problems.append(f"no figure {wanted}")
for f in j["figures"]:
    c = f.get("costs")
    what = f"{f['name']} {f['size']}"
    if c is None:
        problems.append(f"{what}: no costs")
        continue
    per = "handover" if f["name"].startswith("handover") else "GiB"
    if c["per"] != per or not c["count"] > 0:
        problems.append(f"{what}: counted per {c['per']} over {c['count']}")
    if c["agent_source"] != "status query":
        problems.append(f"{what}: agent side from {c['agent_source']}")
    sub, recv, agent = c["client_submit"], c["client_recv"], c["agent"]
    threads = 2 if f["name"] == "handover_rate_threads" else 1
    # System calls measured on every side (with SQ polling a side may make none in a figure).
    if sub["threads"] != threads or not sub["cpu_us"] > 0 or sub["syscalls"] is None:
        problems.append(f"{what}: submitting threads {sub}")
    if recv["threads"] != 1 or not recv["cpu_us"] > 0 or recv["syscalls"] is None:
        problems.append(f"{what}: receiving thread {recv}")
    if agent is None or agent["syscalls"] is None or not agent["cpu_us"] > 0:
        problems.append(f"{what}: agent {agent}")
    roles = (sub, recv, c["client_io_uring"], agent)
    if abs(c["total"]["syscalls"] - sum(r["syscalls"] for r in roles)) > 1e-6 * (1 + c["total"]["syscalls"]):
        problems.append(f"{what}: total {c['total']} is not the sum of the roles")
    batches = [c[k] for k in ("messages_per_send", "frames_per_read", "agent_messages_per_send",
                                "agent_frames_per_read")]
    if not all(b is not None and b > 0.5 for b in batches):
        problems.append(f"{what}: batch sizes {batches}")
    # TCP segments that carried data, counted on the client's sockets: some each way per figure
    # (a copy's done reports come back, a handover's too), no more than the pure ACKs included.
    segs = [c.get(k) for k in ("data_segments_out", "data_segments_in", "segments_in")]
    if not all(s is not None and s > 0 for s in segs) or segs[2] < segs[1]:
        problems.append(f"{what}: data segments out, in, all in per {c['per']}: {segs}")
    # io_uring's batch: completions reaped per io_uring_enter, on both ends (null on plain).
    rings = [c["completions_per_enter"], c["agent_completions_per_enter"]]
    if j["backend"] == "io_uring" and not all(r is not None and r > 0.5 for r in rings):
        problems.append(f"{what}: completions per enter {rings}")
if not any(t["side"] == "agent" and t["syscalls"] > 0 for f in j["figures"] for t in f["costs"]["threads"]):
    problems.append("no agent thread made a system call in any figure")
if not any(t["role"] == "recv" and t["syscalls"] > 0 for f in j["figures"] for t in f["costs"]["threads"]):
    problems.append("the receiving thread made no system call in any figure")
if problems:
    sys.exit("\n".join(problems))
print(f"{len(j['figures'])} figures, each with its costs")
