#!/usr/bin/env python3
"""Issue 11's 2-core targets, judged the only way this machine allows: alternated rounds, each
ratio against the page-shaped floor of its own round, and the median of the rounds (one round
says little: the floor itself moves 2 to 3x between rounds on a shared 2-core machine).

  bench/cost_rounds.py [--rounds N] [--seconds S] [--out DIR]   measure, then judge
  bench/cost_rounds.py --judge DIR                              judge rounds measured before

A round is `rig-bench --handovers-only --threads 4` (its own rig-agent on loopback; the pipelined
tiny handovers from one thread and from four) and then `rig-page-floor` at the same message
size. rig-bench and rig-page-floor come from PATH (scripts/bench --cost-rounds N puts build/bench
first). Writes DIR/round-K.json (rig-bench), DIR/floor-K.json and DIR/cost-rounds.json (the
rounds' figures, the medians and the verdicts).

The targets (per pipelined tiny handover, client and agent together, medians of the rounds):
  calls:  system calls from one thread <= 1.5
  cpu:    CPU time from one thread <= 1.1x the floor's per message (each round against its floor)
  scale:  system calls from four threads < from one thread
Exit 0 when all three hold, 1 when one is missed, 2 when a figure is missing."""
import argparse
import json
import os
import statistics
import subprocess
import sys

import rig_bench_json

CALLS_MAX = 1.5
CPU_RATIO_MAX = 1.1


def figure_costs(bench, name):
    """The costs and the value of figure `name` ((None, None) where it has no costs)."""
    for f in bench.get("figures", []):
        if f.get("name") == name and f.get("costs"):
            return f["costs"], f.get("value")
    return None, None


def costs(bench, name):
    c, value = figure_costs(bench, name)
    return (c["total"], value) if c else (None, None)


def handovers_per_segment(bench):
    """Pipelined handovers from one thread per TCP segment the client sent (None where rig-bench
    did not count segments)."""
    out = (figure_costs(bench, "handover_rate_1")[0] or {}).get("data_segments_out")
    return 1 / out if out else None


def round_figures(bench, floor):
    one, rate1 = costs(bench, "handover_rate_1")
    four, rate4 = costs(bench, "handover_rate_threads")
    per = (floor or {}).get("per_message") or {}
    if one is None or four is None or not per.get("cpu_us"):
        return None
    return {"cpu_us": one["cpu_us"], "calls": one["syscalls"], "rate": rate1,
            "calls_4": four["syscalls"], "cpu_us_4": four["cpu_us"], "rate_4": rate4,
            "floor_cpu_us": per["cpu_us"], "floor_calls": per.get("syscalls"),
            "floor_rate": floor.get("rate_msg_s"), "floor_per_read": floor.get("messages_per_answerer_read"),
            "per_segment": handovers_per_segment(bench), "floor_per_segment": floor.get("messages_per_segment"),
            "cpu_ratio": one["cpu_us"] / per["cpu_us"]}


def load(path):
    return rig_bench_json.load(path, "cost-rounds")


def segments(per_segment):
    return f"{per_segment:5.2f}" if per_segment else "    -"


def judge(out):
    """Reads DIR's rounds, prints them with the medians and verdicts, writes cost-rounds.json."""
    rounds = []
    k = 1
    while os.path.exists(os.path.join(out, f"round-{k}.json")):
        fig = round_figures(load(os.path.join(out, f"round-{k}.json")) or {},
                            load(os.path.join(out, f"floor-{k}.json")))
        if fig is None:
            print(f"cost-rounds: round {k}: a figure is missing (handover_rate_1, handover_rate_threads"
                  " with costs, or the floor's per_message.cpu_us)")
            return 2
        rounds.append(fig)
        k += 1
    if not rounds:
        print(f"cost-rounds: no round-1.json in {out}")
        return 2
    # The floor's messages per answerer read tell its regime: where its answerer finds one or two
    # messages per read, it wakes per message and costs more. Messages per TCP segment (h/seg,
    # msg/seg) tell the kernel's coalescing of small sends, which BBR's pacing sets and which
    # moves the cost per message most (bench/RESULTS.md).
    print("round  CPU us  calls  rate k/s  h/seg | 4 thr calls  CPU us | floor CPU us  calls  rate k/s  msg/read"
          "  msg/seg | CPU ratio")
    for i, r in enumerate(rounds, 1):
        print(f"{i:5}  {r['cpu_us']:6.2f}  {r['calls']:5.2f}  {r['rate'] / 1e3:8.0f}  {segments(r['per_segment'])}"
              f" | {r['calls_4']:11.2f}  {r['cpu_us_4']:6.2f} | {r['floor_cpu_us']:12.2f}  {r['floor_calls'] or 0:5.2f}"
              f"  {(r['floor_rate'] or 0) / 1e3:8.0f}  {r['floor_per_read'] or 0:8.1f}"
              f"  {segments(r['floor_per_segment']):>7} | {r['cpu_ratio']:9.2f}")
    med = {key: statistics.median(r[key] for r in rounds)
           for key in ("cpu_us", "calls", "calls_4", "floor_cpu_us", "cpu_ratio")}
    verdicts = {
        "calls": med["calls"] <= CALLS_MAX,
        "cpu": med["cpu_ratio"] <= CPU_RATIO_MAX,
        "scale": med["calls_4"] < med["calls"],
    }
    word = {True: "met", False: "MISSED"}
    print(f"medians of {len(rounds)} rounds: CPU {med['cpu_us']:.2f} us against the floor's "
          f"{med['floor_cpu_us']:.2f} (ratio per round, median {med['cpu_ratio']:.2f}, "
          f"range {min(r['cpu_ratio'] for r in rounds):.2f}-{max(r['cpu_ratio'] for r in rounds):.2f})")
    print(f"calls: system calls per handover from one thread {med['calls']:.2f} <= {CALLS_MAX} -> "
          f"{word[verdicts['calls']]}")
    print(f"cpu: CPU per handover against the floor {med['cpu_ratio']:.2f} <= {CPU_RATIO_MAX} -> "
          f"{word[verdicts['cpu']]}")
    print(f"scale: system calls from four threads {med['calls_4']:.2f} < from one {med['calls']:.2f} -> "
          f"{word[verdicts['scale']]}")
    with open(os.path.join(out, "cost-rounds.json"), "w") as f:
        json.dump({"rounds": rounds, "medians": med, "verdicts": verdicts}, f, indent=1)
    return 0 if all(verdicts.values()) else 1


def measure(out, rounds, seconds):
    os.makedirs(out, exist_ok=True)
    for stale in os.listdir(out):
        if stale.startswith(("round-", "floor-")):
            os.remove(os.path.join(out, stale))
    size = subprocess.run(["rig-bench", "--handover-bytes"], capture_output=True, text=True,
                          check=True).stdout.strip()
    for k in range(1, rounds + 1):
        print(f"cost-rounds: round {k} of {rounds}: load average {open('/proc/loadavg').read().split()[0]}",
              file=sys.stderr, flush=True)
        bench = subprocess.run(["rig-bench", "--handovers-only", "--min-time", str(seconds), "--rtt-count", "500",
                                "--threads", "4", "--json", os.path.join(out, f"round-{k}.json")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
        if bench.returncode != 0:
            print(f"cost-rounds: rig-bench exited {bench.returncode}:\n{bench.stderr}", file=sys.stderr)
            return False
        with open(os.path.join(out, f"floor-{k}.json"), "w") as f:
            floor = subprocess.run(["rig-page-floor", "--message-bytes", size, "--seconds", str(seconds)],
                                   stdout=f, stderr=subprocess.PIPE, text=True, timeout=600)
        if floor.returncode != 0:
            print(f"cost-rounds: rig-page-floor exited {floor.returncode}:\n{floor.stderr}", file=sys.stderr)
            return False
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--out", default="build/bench-results/cost-rounds")
    p.add_argument("--judge", metavar="DIR", help="judge the rounds in DIR, measure nothing")
    a = p.parse_args()
    if a.judge:
        return judge(a.judge)
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    if not measure(a.out, a.rounds, a.seconds):
        return 2
    return judge(a.out)


if __name__ == "__main__":
    sys.exit(main())
