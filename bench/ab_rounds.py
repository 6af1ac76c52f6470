#!/usr/bin/env python3
"""Two builds' rig-bench figures and costs compared the only way a shared, noisy machine allows:
alternated rounds (A then B, then B then A, ...), the median of each figure over the rounds, and
in how many rounds B came out above A. One run of each says little: on the 2-core machine the
same build moves 5 to 10 % between runs (bench/RESULTS.md, "The bisect").

  bench/ab_rounds.py --a BUILD_A --b BUILD_B [--rounds N] [--out DIR] [-- RIG_BENCH_OPTIONS]
  bench/ab_rounds.py --judge DIR

BUILD is a build folder (BUILD/bench/rig-bench) or a bench bundle (BUILD/bin/rig-bench); each
rig-bench starts the rig-agent beside it, so client and agent come from the same build. The
options after `--` go to both (default: `--figures h2d,d2h --sizes 1MiB,64MiB --min-time 1`;
both builds need `--figures` and `--sizes`, which rig-bench has from 2026-12-03 on). Writes
DIR/a-K.json and DIR/b-K.json (rig-bench's JSON of round K) and DIR/ab-rounds.json (the
medians).

For each figure both builds measured, the table gives the figure's value and its costs per
operation (per GiB moved or per tiny handover, client and agent together: rig-bench's
costs.total; docs/TUNING.md, "Reading the cost figures"): CPU time, system calls, context
switches. B/A is the ratio of the medians; "B above" counts the rounds in which B's figure was
the higher of the two (for costs, higher is worse). Exit 0 when measured and judged, 2 when a
run failed or a round is missing."""
import argparse
import json
import os
import statistics
import subprocess
import sys

from rig_bench_json import figures_of, size_text
from rig_bench_json import load as load_or_none

DEFAULT_OPTIONS = ["--figures", "h2d,d2h", "--sizes", "1MiB,64MiB", "--min-time", "1"]
# (key in the table and the JSON, where in a figure, unit)
METRICS = [("value", None, None), ("cpu_us", "cpu_us", "CPU us"), ("calls", "syscalls", "calls"),
           ("switches", "switches", "switches")]


def load(path):
    return load_or_none(path, "ab-rounds")


def rig_bench(build):
    for p in ("bench/rig-bench", "bin/rig-bench"):
        if os.access(os.path.join(build, p), os.X_OK):
            return os.path.join(build, p)
    return None


def metrics(f):
    """One figure's value and costs.total, by METRICS' keys, with what labels it."""
    costs = f.get("costs") or {}
    m = {"value": f.get("value"), "unit": f.get("unit"), "label": f.get("label"), "per": costs.get("per")}
    for key, field, _ in METRICS[1:]:
        m[key] = (costs.get("total") or {}).get(field)
    return m


def figures(run):
    """{(name, size): metrics} of one rig-bench JSON."""
    return {key: metrics(f) for key, f in figures_of(run).items()}


def judge(out):
    """Reads DIR's rounds, prints the medians, writes ab-rounds.json; 0, or 2 when none."""
    rounds = []
    k = 1
    while os.path.exists(os.path.join(out, f"a-{k}.json")) or os.path.exists(os.path.join(out, f"b-{k}.json")):
        a, b = load(os.path.join(out, f"a-{k}.json")), load(os.path.join(out, f"b-{k}.json"))
        if a is None or b is None:
            print(f"ab-rounds: round {k} lacks a build's run", file=sys.stderr)
            return 2
        rounds.append((figures(a), figures(b)))
        k += 1
    if not rounds:
        print(f"ab-rounds: no a-1.json in {out}", file=sys.stderr)
        return 2
    common = [key for key in rounds[0][0] if all(key in a and key in b for a, b in rounds)]
    if not common:
        print("ab-rounds: the builds measured no figure in common", file=sys.stderr)
        return 2
    rows, result = [], []
    for key in common:
        first = rounds[0][0][key]
        label = f"{first['label']} {size_text(key[1])}" if first["unit"] == "GB/s" else first["label"]
        entry = {"name": key[0], "size": key[1], "label": label, "per": first["per"], "metrics": {}}
        for metric, _, unit in METRICS:
            pairs = [(a[key][metric], b[key][metric]) for a, b in rounds]
            if any(x is None or y is None for x, y in pairs):
                continue
            ma = statistics.median(x for x, _ in pairs)
            mb = statistics.median(y for _, y in pairs)
            above = sum(1 for x, y in pairs if y > x)
            ratio = mb / ma if ma else None
            entry["metrics"][metric] = {"a": ma, "b": mb, "b_over_a": ratio, "b_above": above}
            what = first["unit"] if metric == "value" else f"{unit} per {first['per']}"
            rows.append([label, what, f"{ma:.4g}", f"{mb:.4g}", f"{ratio:.3f}" if ratio else "n/a",
                         f"{above} of {len(pairs)}"])
        result.append(entry)
    head = ["figure", "metric", "A median", "B median", "B/A", "B above"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print(f"medians of {len(rounds)} alternated rounds")
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    with open(os.path.join(out, "ab-rounds.json"), "w") as f:
        json.dump({"rounds": len(rounds), "figures": result}, f, indent=1)
    return 0


def measure(out, builds, rounds, options):
    os.makedirs(out, exist_ok=True)
    for stale in os.listdir(out):
        if stale.startswith(("a-", "b-", "ab-rounds")):
            os.remove(os.path.join(out, stale))
    for k in range(1, rounds + 1):
        order = "ab" if k % 2 else "ba"
        print(f"ab-rounds: round {k} of {rounds} ({order[0].upper()} first): load average "
              f"{open('/proc/loadavg').read().split()[0]}", file=sys.stderr, flush=True)
        for which in order:
            run = subprocess.run([builds[which], *options, "--json", os.path.join(out, f"{which}-{k}.json")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=1800)
            if run.returncode != 0:
                print(f"ab-rounds: {builds[which]} exited {run.returncode}:\n{run.stderr}", file=sys.stderr)
                return False
    return True


def main():
    argv = sys.argv[1:]
    options = None
    if "--" in argv:
        options = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", metavar="BUILD_A", help="the reference build (a build folder or a bench bundle)")
    p.add_argument("--b", metavar="BUILD_B", help="the build compared with it")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--out", default="build/bench-results/ab-rounds")
    p.add_argument("--judge", metavar="DIR", help="judge the rounds in DIR, measure nothing")
    a = p.parse_args(argv)
    if a.judge:
        return judge(a.judge)
    if not a.a or not a.b:
        p.error("give --a and --b, or --judge DIR")
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    builds = {"a": rig_bench(a.a), "b": rig_bench(a.b)}
    for which, path in builds.items():
        if path is None:
            p.error(f"no rig-bench in {getattr(a, which)} (bench/rig-bench or bin/rig-bench)")
    if not measure(a.out, builds, a.rounds, options if options else DEFAULT_OPTIONS):
        return 2
    return judge(a.out)


if __name__ == "__main__":
    sys.exit(main())
