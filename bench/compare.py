#!/usr/bin/env python3
"""Compares rig-bench runs: with their fair references (ratios), or two runs with each other.

    compare.py --results rig-bench.json --references references.json [--striped rig-bench-stripes.json] [--markdown]
    compare.py BEFORE AFTER [--markdown]

The first form prints each of rig-bench's figures as a ratio to its fair reference measured in
the same go (bench/refs/references; docs/TUNING.md, "References"), with issue 11's target where
it has one. A ratio is ours / reference: for rates and bandwidth higher is better, for round
trips lower is better. The targets are for a 16-core machine (2 cores starve the reference tools
and our threads alike). --striped is a second rig-bench run with --stripes 4: its 64 MiB copies
are judged against the raw single stream. References marked information only (iperf3, sockperf
with Nagle) are listed under the table and never used as a ratio's reference.

The second form tables two runs figure by figure (AFTER / BEFORE). BEFORE and AFTER are each a
rig-bench JSON (`rig-bench --json`) or a results folder of scripts/bench (its rig-bench.json,
rig-bench-stripes.json and references.json are compared alike).
"""
import argparse
import operator
import os
import signal
import sys

from rig_bench_json import figures_of, size_text
from rig_bench_json import load as load_or_none

MIB = 1 << 20
GE, LE = (">=", operator.ge), ("<=", operator.le)


def load(path):
    doc = load_or_none(path, "compare.py")
    if doc is None:
        sys.exit(1)
    return doc


def fmt(v, unit):
    if v is None:
        return "n/a"
    if unit == "GB/s":
        return f"{v:.3f} GB/s"
    if unit == "us":
        return f"{v:.1f} us"
    if unit == "msg/s":
        return f"{v:,.0f} msg/s"
    return f"{v:.3g} {unit}"


def print_table(head, rows, markdown):
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())


# ---- ours against the references --------------------------------------------------------------

# (run: "main" or "striped", figure name, size or None, reference key, higher is better,
#  goal: (comparison, threshold) or None for information)
RATIOS = [
    ("main", "handover_rate_1", None, "sockperf_tp_64", True, (GE, 1.0)),
    ("main", "handover_rate_1", None, "ucx_tag_bw_8", True, (GE, 1.0)),
    ("main", "handover_rate_1", None, "page_floor", True, None),
    ("main", "handover_rate_threads", None, "sockperf_tp_64", True, (GE, 2.0)),
    ("main", "handover_rtt_p50", None, "sockperf_rtt_p50", False, (LE, 1.0)),
    ("main", "handover_rtt_p99", None, "sockperf_rtt_p99", False, None),
    # The 1.5x goal is for the polling mode on both ends; without it the ratio is information.
    ("main", "handover_rtt_p50", None, "ucx_tag_lat_rtt", False, None),
    ("main", "h2d", MIB, "raw_stream_1m", True, (GE, 0.95)),
    ("main", "d2h", MIB, "raw_stream_1m", True, (GE, 0.95)),
    ("main", "h2d", MIB, "ucx_tag_bw_1m", True, None),
    ("main", "d2h", MIB, "ucx_tag_bw_1m", True, None),
    ("main", "h2d", 64 * MIB, "raw_stream_64m", True, (GE, 0.95)),
    ("main", "d2h", 64 * MIB, "raw_stream_64m", True, (GE, 0.95)),
    ("main", "h2d", 64 * MIB, "ucx_tag_bw_64m", True, None),
    ("main", "d2h", 64 * MIB, "ucx_tag_bw_64m", True, None),
    ("striped", "h2d", 64 * MIB, "raw_stream_64m", True, (GE, 1.5)),
    ("striped", "d2h", 64 * MIB, "raw_stream_64m", True, (GE, 1.5)),
    ("striped", "h2d_strided", None, "raw_stream_64m", True, (GE, 1.5)),
    ("striped", "d2h_strided", None, "raw_stream_64m", True, (GE, 1.5)),
]


# The cost of a pipelined tiny handover, client and agent together (rig-bench's costs.total),
# against the page-shaped floor's per message, and the calls against an absolute bound: issue 11's
# 2-core targets. (figure, costs.total key, reference key or None, goal)
COSTS = [
    ("handover_rate_1", "cpu_us", "page_floor_cpu_us", (LE, 1.1)),
    ("handover_rate_1", "syscalls", None, (LE, 1.5)),
]


def cost_rows(figs, refs):
    rows = []
    for name, key, ref_key, ((sign, cmp), threshold) in COSTS:
        fig = find(figs, name, None)
        total = ((fig or {}).get("costs") or {}).get("total") or {}
        ours = total.get(key)
        if ours is None:
            continue
        label = f"{fig['label']}: {key} per handover, client + agent"
        if ref_key is None:
            rows.append([label, f"{ours:.3g}", "(an absolute bound)", "", f"{ours:.2f}", "lower",
                         f"{sign} {threshold:g}", "met" if cmp(ours, threshold) else "not met"])
            continue
        r = refs.get(ref_key)
        have = r is not None and r.get("value")
        ratio = ours / r["value"] if have else None
        rows.append([label, f"{ours:.3g}", r["label"] if r is not None else f"{ref_key} (missing)",
                     f"{r['value']:.3g}" if have else "n/a", f"{ratio:.2f}" if ratio is not None else "n/a",
                     "lower", f"{sign} {threshold:g}",
                     ("met" if cmp(ratio, threshold) else "not met") if ratio is not None else ""])
    return rows


def find(figs, name, size):
    for (n, s), f in figs.items():
        if n == name and (size is None or s == size):
            return f
    return None


def ratios(args):
    runs = {"main": figures_of(load(args.results)),
            "striped": figures_of(load(args.striped)) if args.striped else {}}
    stripes = load(args.striped).get("stripes") if args.striped else None
    ref_doc = load(args.references)
    refs = {r["key"]: r for r in ref_doc.get("references", [])}

    rows = []
    for run, name, size, key, higher, goal in RATIOS:
        fig = find(runs[run], name, size)
        if fig is None:
            continue
        r = refs.get(key)
        if r is not None and r.get("info_only"):
            sys.exit(f"compare.py: reference {key} is information only and cannot judge {name}")
        have = r is not None and r.get("value")
        ratio = fig["value"] / r["value"] if have else None
        label = fig["label"] + (f" ({size_text(fig['size'])})" if fig["unit"] == "GB/s" else "")
        if run == "striped":
            label += f", {stripes} stripes"
        goal_text, met = "(info)", ""
        if goal is not None:
            (sign, cmp), threshold = goal
            goal_text = f"{sign} {threshold:g}"
            if ratio is not None:
                met = "met" if cmp(ratio, threshold) else "not met"
        rows.append([label, fmt(fig["value"], fig["unit"]),
                     r["label"] if r is not None else f"{key} (missing)",
                     fmt(r["value"], r["unit"]) if have else "n/a (failed)" if r is not None else "n/a",
                     f"{ratio:.2f}" if ratio is not None else "n/a",
                     "higher" if higher else "lower", goal_text, met])

    rows += cost_rows(runs["main"], refs)

    nproc = ref_doc.get("machine", {}).get("nproc")
    if not args.markdown:
        print(f"ratios (ours / reference), {nproc} cores; the goals are issue 11's targets for 16 cores")
    print_table(["our figure", "ours", "reference", "reference value", "ours/ref", "better", "goal", ""],
                rows, args.markdown)

    info = [r for r in refs.values() if r.get("info_only")]
    if info:
        print()
        print("information only (never a ratio's reference):")
        for r in info:
            print(f"{'- ' if args.markdown else '  '}{r['label']}: {fmt(r.get('value'), r['unit'])}")
    return 0


# ---- one run against another --------------------------------------------------------------------

def run_files(path):
    """{part: JSON} of a rig-bench JSON or of a results folder."""
    if os.path.isdir(path):
        parts = {}
        for part, name in (("rig-bench", "rig-bench.json"), ("rig-bench, 4 stripes", "rig-bench-stripes.json"),
                           ("references", "references.json")):
            p = os.path.join(path, name)
            if os.path.exists(p):
                parts[part] = load(p)
        if not parts:
            sys.exit(f"compare.py: {path} has none of rig-bench.json, rig-bench-stripes.json, references.json")
        return parts
    return {"rig-bench": load(path)}


def entries(part, doc):
    """(identity, row label, value, unit, higher is better) of one part of a run, in its order;
    the identity (a reference's key, a figure's name and size) matches rows across runs."""
    if part == "references":
        return [(r["key"], r["label"], r.get("value"), r["unit"], r["unit"] not in ("us", "calls", "switches"))
                for r in doc.get("references", [])]
    out = []
    for f in doc.get("figures", []):
        size = f" ({size_text(f['size'])})" if f["unit"] == "GB/s" and f["size"] else ""
        out.append(((f["name"], f["size"]), f["label"] + size, f["value"], f["unit"], f["unit"] != "us"))
    return out


def two_runs(before_path, after_path, markdown):
    before, after = run_files(before_path), run_files(after_path)
    rows = []
    for part in before:
        if part not in after:
            continue
        old_values = {e[0]: e[2] for e in entries(part, before[part])}
        for identity, label, value, unit, higher in entries(part, after[part]):
            if identity not in old_values:
                continue
            old = old_values[identity]
            ratio = value / old if value is not None and old else None
            verdict = ""
            if ratio is not None:
                verdict = "same (within 5%)" if abs(ratio - 1) <= 0.05 else \
                          "better" if (ratio > 1) == higher else "worse"
            rows.append([part, label, fmt(old, unit), fmt(value, unit),
                         f"{ratio:.2f}" if ratio is not None else "n/a", verdict])
    if not rows:
        sys.exit(f"compare.py: {before_path} and {after_path} have no figure in common")
    print_table(["part", "figure", "before", "after", "after/before", ""], rows, markdown)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", metavar="RUN", help="BEFORE AFTER: two rig-bench JSONs or results folders")
    ap.add_argument("--results", help="rig-bench.json of the run to judge")
    ap.add_argument("--references", help="references.json measured in the same go")
    ap.add_argument("--striped", help="rig-bench JSON of the same go run with --stripes 4")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = ap.parse_args()
    if args.runs:
        if len(args.runs) != 2 or args.results or args.references or args.striped:
            ap.error("give either BEFORE AFTER or --results and --references")
        return two_runs(args.runs[0], args.runs[1], args.markdown)
    if not (args.results and args.references):
        ap.error("give either BEFORE AFTER or --results and --references")
    return ratios(args)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `compare.py A B | head` ends quietly
    sys.exit(main())
