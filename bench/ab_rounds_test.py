#!/usr/bin/env python3
"""Checks bench/ab_rounds.py: its medians, ratios and "B above" counts on made-up rounds (where
median and mean differ, and with a tie), a figure only one build measured left out, a round that lacks a build's run said so; then two
real short rounds of one build against itself, alternated (ctest
ab_rounds_compare_two_builds_round_by_round).

  ab_rounds_test.py BUILD   (a build folder: BUILD/bench/rig-bench)"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "ab_rounds.py")
failures = []


def expect(what, ok):
    if not ok:
        failures.append(what)


def doc(value, cpu, calls, switches):
    return {"figures": [{"name": "h2d", "size": 1 << 20, "label": "host -> device", "unit": "GB/s", "value": value,
                         "costs": {"per": "GiB", "total": {"cpu_us": cpu, "syscalls": calls, "switches": switches}}}]}


def judge(a_rounds, b_rounds):
    with tempfile.TemporaryDirectory() as d:
        for which, rounds in (("a", a_rounds), ("b", b_rounds)):
            for k, r in enumerate(rounds, 1):
                if r is not None:
                    with open(os.path.join(d, f"{which}-{k}.json"), "w") as f:
                        json.dump(doc(*r), f)
        run = subprocess.run([sys.executable, SCRIPT, "--judge", d], capture_output=True, text=True)
        path = os.path.join(d, "ab-rounds.json")
        summary = json.load(open(path)) if os.path.exists(path) else None
    return run, summary


# CPU: A 1, 2, 10 and B 2, 4, 4: medians 2 and 4 (means 4.33 and 3.33), B above in rounds 1 and 2.
# Calls: A 5, 5, 5 and B 5, 6, 4: a tie in round 1 is not "above".
run, summary = judge([(3.0, 1, 5, 100), (3.2, 2, 5, 100), (2.8, 10, 5, 100)],
                     [(3.1, 2, 5, 90), (3.3, 4, 6, 90), (2.9, 4, 4, 90)])
expect(f"made-up rounds judged: exit {run.returncode}: {run.stderr}", run.returncode == 0 and summary)
if summary:
    m = summary["figures"][0]["metrics"]
    expect(f"three rounds: {summary['rounds']}", summary["rounds"] == 3)
    expect(f"CPU medians 2 and 4, ratio 2, B above in 2: {m['cpu_us']}",
           m["cpu_us"]["a"] == 2 and m["cpu_us"]["b"] == 4 and m["cpu_us"]["b_over_a"] == 2 and
           m["cpu_us"]["b_above"] == 2)
    expect(f"calls: a tie is not above: {m['calls']}", m["calls"]["b_above"] == 1)
    expect(f"values: medians 3.0 and 3.1, B above in 3: {m['value']}",
           m["value"]["a"] == 3.0 and m["value"]["b"] == 3.1 and m["value"]["b_above"] == 3)
    expect(f"switches: B above in none: {m['switches']}", m["switches"]["b_above"] == 0)
    expect("the table names the figure and its size", "host -> device 1 MiB" in run.stdout)

# A figure only one build measured (an older rig-bench, other options) is left out, not a crash.
with tempfile.TemporaryDirectory() as d:
    for which in "ab":
        extra = doc(3.0, 1, 5, 100)
        if which == "a":
            extra["figures"].append(dict(extra["figures"][0], name="d2h", label="device -> host"))
        with open(os.path.join(d, f"{which}-1.json"), "w") as f:
            json.dump(extra, f)
    run = subprocess.run([sys.executable, SCRIPT, "--judge", d], capture_output=True, text=True)
    judged = json.load(open(os.path.join(d, "ab-rounds.json")))["figures"] if run.returncode == 0 else []
    expect(f"a figure of A only is left out: exit {run.returncode}, judged {[f['name'] for f in judged]}, "
           f"{run.stderr}", [f["name"] for f in judged] == ["h2d"])

run, summary = judge([(3.0, 1, 5, 100), (3.0, 1, 5, 100)], [(3.0, 1, 5, 100), None])
expect(f"a round without B's run: exit {run.returncode}, said {run.stderr!r}",
       run.returncode == 2 and "round 2" in run.stderr)

# Two real rounds, the build against itself: both ran, B first in round 2, every metric judged.
build = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    run = subprocess.run([sys.executable, SCRIPT, "--a", build, "--b", build, "--rounds", "2", "--out", d, "--",
                          "--figures", "h2d", "--sizes", "256KiB", "--min-time", "0.05", "--batch-bytes", "1MiB"],
                         capture_output=True, text=True, timeout=240)
    expect(f"real rounds: exit {run.returncode}: {run.stderr}", run.returncode == 0)
    expect(f"round 2 ran B first: {run.stderr!r}", "round 2 of 2 (B first)" in run.stderr)
    path = os.path.join(d, "ab-rounds.json")
    summary = json.load(open(path)) if os.path.exists(path) else {}
    figs = summary.get("figures", [])
    expect(f"real rounds judged h2d 256 KiB on every metric: {figs}",
           len(figs) == 1 and figs[0]["size"] == 256 << 10 and
           set(figs[0]["metrics"]) == {"value", "cpu_us", "calls", "switches"})

if failures:
    sys.exit("ab_rounds_test: " + "\n".join(failures))
print("ab_rounds_test: medians, ratios and counts as made up; two real rounds alternated")
