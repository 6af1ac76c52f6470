#!/usr/bin/env python3
"""Prints rig-bench's figures as ratios to the reference figures measured in the same go.

    compare.py --results rig-bench.json --references references.json [--markdown]

A ratio is ours / reference. For bandwidth and message rates higher is better; for round trips
lower is better. The goals are issue 5's targets, each a plain inequality on the ratio:
copies at 64 MiB >= 1.0x iperf3 single stream and >= 0.9x ucx_perftest put_bw (get_bw for
device -> host); strided copies >= 0.8x iperf3; a tiny handover's round trip p50 <= 1.2x and p99
<= 2x sockperf's full round trip; tiny handovers from one thread >= 0.8x sockperf's message rate,
from four threads on four proxies >= 1.0x. Rows without a goal are information (shared/DESIGN.md's
"best of iperf3 and UCX, tag_bw included", and UCX's busy-polled latency).
"""
import operator
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

    ge, le = (">=", operator.ge), ("<=", operator.le)
    # (our figure, reference, higher is better, goal: (comparison, threshold) or None)
    rows = [
        (ours("h2d", MIB64), ref("iperf3"), True, (ge, 1.0)),
        (ours("h2d", MIB64), ref("ucx_put_bw"), True, (ge, 0.9)),
        (ours("h2d", MIB64), best("iperf3", "ucx_put_bw", "ucx_tag_bw"), True, None),
        (ours("d2h", MIB64), ref("iperf3"), True, (ge, 1.0)),
        (ours("d2h", MIB64), ref("ucx_get_bw"), True, (ge, 0.9)),
        (ours("d2h", MIB64), best("iperf3", "ucx_get_bw", "ucx_tag_bw"), True, None),
        (ours("h2d_strided"), ref("iperf3"), True, (ge, 0.8)),
        (ours("d2h_strided"), ref("iperf3"), True, (ge, 0.8)),
        (ours("handover_rtt_p50"), ref("sockperf_rtt_p50"), False, (le, 1.2)),
        (ours("handover_rtt_p99"), ref("sockperf_rtt_p99"), False, (le, 2.0)),
        (ours("handover_rtt_p50"), info_double("ucx_tag_lat"), False, None),
        (ours("handover_rate_1"), ref("sockperf_tp"), True, (ge, 0.8)),
        (ours("handover_rate_threads"), ref("sockperf_tp"), True, (ge, 1.0)),
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
    for fig, r, higher, goal in rows:
        if fig is None:
            continue
        label = fig["label"] + (f" ({fig['size'] >> 20} MiB)" if fig["unit"] == "GB/s" else "")
        ratio = fig["value"] / r["value"] if r is not None and r["value"] else None
        met, goal_text = "", "(info)"
        if goal is not None:
            (sign, cmp), threshold = goal
            goal_text = f"{sign} {threshold:g}"
            if ratio is not None:
                met = "met" if cmp(ratio, threshold) else "not met"
        table.append([label, fmt(fig["value"], fig["unit"]),
                      r["label"] if r is not None else "(reference missing)",
                      fmt(r["value"], r["unit"]) if r is not None else "n/a",
                      f"{ratio:.2f}" if ratio is not None else "n/a",
                      "higher" if higher else "lower", goal_text, met])

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
