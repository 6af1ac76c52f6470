#!/usr/bin/env python3
"""Checks bench/cost_rounds.py: its verdicts on made-up rounds (each target met just inside its
bound and missed just outside it, the CPU ratio taken per round against that round's floor, the
median of the rounds, a missing figure said so), then one real short round through PATH's
rig-bench and rig-page-floor (ctest cost_rounds_judge_the_2_core_targets).

  cost_rounds_test.py BENCH_DIR   (the folder holding rig-bench, rig-agent and rig-page-floor)"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "cost_rounds.py")
failures = []


def bench_doc(cpu, calls, calls_4):
    total = lambda c, s: {"total": {"cpu_us": c, "syscalls": s}}
    return {"figures": [{"name": "handover_rtt_p50", "value": 30.0},
                        {"name": "handover_rate_1", "value": 2e5, "costs": total(cpu, calls)},
                        {"name": "handover_rate_threads", "value": 3e5, "costs": total(cpu / 2, calls_4)}]}


def judge(rounds):
    """rounds: (our CPU, the floor's CPU, calls from one thread, calls from four) per round."""
    with tempfile.TemporaryDirectory() as d:
        for k, (cpu, floor, calls, calls_4) in enumerate(rounds, 1):
            with open(os.path.join(d, f"round-{k}.json"), "w") as f:
                json.dump(bench_doc(cpu, calls, calls_4), f)
            with open(os.path.join(d, f"floor-{k}.json"), "w") as f:
                json.dump({"rate_msg_s": 2.5e5, "per_message": {"cpu_us": floor, "syscalls": 1.4}}, f)
        run = subprocess.run([sys.executable, SCRIPT, "--judge", d], capture_output=True, text=True)
        summary = json.load(open(os.path.join(d, "cost-rounds.json"))) if run.returncode in (0, 1) else None
    lines = {line.split(":")[0]: line for line in run.stdout.splitlines()}
    return run.returncode, lines, summary


def expect(what, ok):
    if not ok:
        failures.append(what)


# All met: ratios 1.05, 1.09, 1.08 (median 1.08); calls 1.4; four threads 1.2.
rc, lines, s = judge([(6.3, 6.0, 1.4, 1.2), (10.9, 10.0, 1.45, 1.2), (5.4, 5.0, 1.3, 1.1)])
expect(f"all inside their bounds: exit 0, got {rc}: {lines}", rc == 0)
expect("cpu met", "-> met" in lines.get("cpu", ""))
expect(f"the median of the per-round ratios is 1.08: {s and s['medians']}",
       s and abs(s["medians"]["cpu_ratio"] - 1.08) < 1e-9)

# CPU just outside: ratios 1.12, 1.11, 1.2 (median 1.12).
rc, lines, s = judge([(11.2, 10.0, 1.4, 1.2), (5.55, 5.0, 1.4, 1.2), (7.2, 6.0, 1.4, 1.2)])
expect(f"CPU ratio 1.12 > 1.1: exit 1, got {rc}", rc == 1)
expect("cpu missed", "-> MISSED" in lines.get("cpu", ""))
expect("calls still met", "-> met" in lines.get("calls", ""))
# Each round against its own floor: ratios 0.92, 1.2, 1.2 (median 1.2) miss, although the
# quotient of the medians (6.0 against 6.0) would pass.
rc, lines, s = judge([(5.5, 6.0, 1.4, 1.2), (6.0, 5.0, 1.4, 1.2), (12.0, 10.0, 1.4, 1.2)])
expect(f"per-round ratios' median 1.2 misses: {lines.get('cpu')}",
       rc == 1 and "1.20" in lines.get("cpu", "") and "-> MISSED" in lines.get("cpu", ""))

# Calls just outside, and four threads not fewer than one.
rc, lines, _ = judge([(5.0, 5.0, 1.51, 1.2), (5.0, 5.0, 1.52, 1.2), (5.0, 5.0, 1.4, 1.2)])
expect(f"calls median 1.51 > 1.5: {lines.get('calls')}", rc == 1 and "-> MISSED" in lines.get("calls", ""))
rc, lines, _ = judge([(5.0, 5.0, 1.4, 1.4), (5.0, 5.0, 1.4, 1.4)])
expect(f"four threads' 1.4 is not fewer than one's 1.4: {lines.get('scale')}",
       rc == 1 and "-> MISSED" in lines.get("scale", ""))

# A round without the four-thread figure is not judged.
with tempfile.TemporaryDirectory() as d:
    doc = bench_doc(5.0, 1.4, 1.2)
    doc["figures"].pop()
    json.dump(doc, open(os.path.join(d, "round-1.json"), "w"))
    json.dump({"per_message": {"cpu_us": 5.0}}, open(os.path.join(d, "floor-1.json"), "w"))
    run = subprocess.run([sys.executable, SCRIPT, "--judge", d], capture_output=True, text=True)
    expect(f"a missing figure: exit 2 and said so, got {run.returncode}: {run.stdout}",
           run.returncode == 2 and "missing" in run.stdout)

# One real round, short: the plumbing (its verdicts on this machine are not this test's subject).
if len(sys.argv) > 1:
    env = dict(os.environ, PATH=sys.argv[1] + os.pathsep + os.environ["PATH"])
    with tempfile.TemporaryDirectory() as d:
        run = subprocess.run([sys.executable, SCRIPT, "--rounds", "1", "--seconds", "0.2", "--out", d],
                             capture_output=True, text=True, env=env, timeout=240)
        ok = run.returncode in (0, 1) and os.path.exists(os.path.join(d, "cost-rounds.json"))
        expect(f"one real round: exit {run.returncode}\n{run.stdout}\n{run.stderr}", ok)
        if ok:
            r = json.load(open(os.path.join(d, "cost-rounds.json")))["rounds"][0]
            expect(f"a real round's figures are positive: {r}",
                   r["cpu_us"] > 0 and r["calls"] > 0 and r["calls_4"] > 0 and r["floor_cpu_us"] > 0)
            # Messages per TCP segment, ours and the floor's: at least one (a segment carries
            # whole small messages or several), counted by TCP_INFO on both.
            expect(f"a real round's messages per segment: {r}",
                   (r["per_segment"] or 0) >= 0.99 and (r["floor_per_segment"] or 0) >= 0.99)

for f in failures:
    print("FAILED:", f)
print(f"cost_rounds_test: {len(failures)} failed")
sys.exit(1 if failures else 0)
