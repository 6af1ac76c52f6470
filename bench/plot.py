#!/usr/bin/env python3
"""Draws rig-bench's copy bandwidth against copy size, with the reference figures as horizontal
lines.

    plot.py --results rig-bench.json [--references references.json] --out bandwidth.png

--results is what `rig-bench --json` writes; --references is what scripts/bench writes (every
reference whose unit is GB/s becomes a line, dotted if it is information only). Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display
import matplotlib.pyplot as plt  # noqa: E402


def size_label(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or n % 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--references")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    with open(args.results) as f:
        results = json.load(f)
    references = []
    if args.references:
        with open(args.references) as f:
            references = [r for r in json.load(f).get("references", [])
                          if r.get("unit") == "GB/s" and r.get("value") is not None]

    figures = results["figures"]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    sweeps = {"h2d": ("host -> device", "o-"), "d2h": ("device -> host", "s-")}
    sizes = set()
    for name, (label, style) in sweeps.items():
        points = sorted((f["size"], f["value"]) for f in figures if f["name"] == name)
        if points:
            sizes.update(s for s, _ in points)
            ax.plot([s for s, _ in points], [v for _, v in points], style, label=label)
    for name, label, marker in (("h2d_strided", "host -> device, strided", "^"),
                                ("d2h_strided", "device -> host, strided", "v")):
        for f in figures:
            if f["name"] == name:
                sizes.add(f["size"])
                ax.plot([f["size"]], [f["value"]], marker, markersize=9, label=label)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(references):
        info = r.get("info_only", False)  # drawn dotted: never a ratio's reference
        ax.axhline(r["value"], linestyle=":" if info else "--", linewidth=1.2, color=colors[(i + 4) % len(colors)],
                   label=f"{r['label']}: {r['value']:.2f} GB/s" + (" (information only)" if info else ""))

    ax.set_xscale("log", base=2)
    ticks = sorted(sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s) for s in ticks], rotation=45, ha="right")
    ax.set_xlabel("bytes per copy (one handover each)")
    ax.set_ylabel("GB/s (1e9 bytes/s)")
    ax.set_ylim(bottom=0)
    machine = results.get("machine", {})
    ax.set_title(f"rig-bench copy bandwidth, {results.get('backend', '?')} link, agent {results.get('agent', '?')}\n"
                 f"{machine.get('nproc', '?')} cores, kernel {machine.get('kernel', '?')}, {results.get('started', '')}",
                 fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
