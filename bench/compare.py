#!/usr/bin/env python3
"""Prints rig-bench's figures as ratios to the reference figures measured in the same go.

    compare.py --results rig-bench.json --references references.json [--markdown]

A ratio is ours / reference. For bandwidth and message rates higher is better; for round trips
lower is better. The goals are shared/DESIGN.md's ("Performance model"): copies in both directions
reach the best of iperf3 and UCX over TCP (put_bw or get_bw by direction, and tag_bw); a tiny handover's round trip comes near sockperf's; one
submitting thread comes near sockperf's TCP message rate and several threads, combined, beyond it.
"met" is printed only where the goal is a plain inequality; "near" goals are left to the reader.
"""
import argparse
import json
import sys

MIB64 = 64 << 20


def load(path):
    with open(path) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--references", required=True)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()

    results = load(args.results)
    refs = {r["key"]: r for r in load(args.references)["references"]}

    def ours(name, size=None):
        for f in results["figures"]:
            if f["name"] == name and (size is None or f["size"] == size):
                return f
        return None

    def ref(key):
        r = refs.get(key)
        return r if r is not None and r.get("value") is not None else None

    def best(*keys):
        have = [r for r in (ref(k) for k in keys) if r is not None]
        if not have:
            return None
        top = max(have, key=lambda r: r["value"])
        return dict(top, label="best of " + ", ".join(r["key"] for r in have) + ": " + top["label"])

    def info_double(key):
        r = ref(key)
        return None if r is None else dict(r, value=2 * r["value"], label="2 x " + r["label"])

    # (our figure, reference, higher is better, goal, whether the goal is a plain inequality)
    rows = [
        (ours("h2d", MIB64), ref("iperf3"), True, "", False),
        (ours("h2d", MIB64), ref("ucx_put_bw"), True, "", False),
        (ours("h2d", MIB64), best("iperf3", "ucx_put_bw", "ucx_tag_bw"), True, ">= 1", True),
        (ours("d2h", MIB64), ref("iperf3"), True, "", False),
        (ours("d2h", MIB64), ref("ucx_get_bw"), True, "", False),
        (ours("d2h", MIB64), best("iperf3", "ucx_get_bw", "ucx_tag_bw"), True, ">= 1", True),
        (ours("h2d_strided"), ref("iperf3"), True, "", False),
        (ours("d2h_strided"), ref("iperf3"), True, "", False),
        (ours("handover_rtt_p50"), ref("sockperf_rtt_p50"), False, "near 1", False),
        (ours("handover_rtt_p99"), ref("sockperf_rtt_p99"), False, "near 1", False),
        (ours("handover_rtt_p50"), info_double("ucx_tag_lat"), False, "(info: UCX busy-polls)", False),
        (ours("handover_rate_1"), ref("sockperf_tp"), True, "near 1", False),
        (ours("handover_rate_threads"), ref("sockperf_tp"), True, "> 1", True),
    ]

    def fmt(v, unit):
        if v is None:
            return "n/a"
        if unit == "GB/s":
            return f"{v:.3f} GB/s"
        if unit == "us":
            return f"{v:.1f} us"
        return f"{v:,.0f} {unit}"

    table = []
    for fig, r, higher, goal, strict in rows:
        if fig is None:
            continue
        label = fig["label"] + (f" ({fig['size'] >> 20} MiB)" if fig["unit"] == "GB/s" else "")
        ratio = fig["value"] / r["value"] if r is not None and r["value"] else None
        met = ""
        if strict and ratio is not None:
            met = "met" if (ratio >= 1 if goal == ">= 1" else ratio > 1) else "not met"
        table.append([label, fmt(fig["value"], fig["unit"]),
                      r["label"] if r is not None else "(reference missing)",
                      fmt(r["value"], r["unit"]) if r is not None else "n/a",
                      f"{ratio:.2f}" if ratio is not None else "n/a",
                      "higher" if higher else "lower", goal, met])

    head = ["our figure", "ours", "reference", "reference value", "ours/ref", "better", "goal", ""]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(str(x[i])) for x in table + [head]) for i in range(len(head))]
        for row in [head] + table:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
