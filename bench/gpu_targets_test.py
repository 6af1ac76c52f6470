#!/usr/bin/env python3
"""Checks bench/gpu_targets.py's verdicts on made-up results: each target met just inside its
bound and missed just outside it, and a missing figure said so (ctest gpu_targets_judge_the_bounds)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MIB64 = 64 << 20


def run(cuda, sim, landing, cuda_poll=None, sim_poll=None):
    with tempfile.TemporaryDirectory() as d:
        for name, doc in (("rig-bench-cuda.json", cuda), ("rig-bench-sim.json", sim), ("landing.json", landing),
                          ("rig-bench-cuda-poll.json", cuda_poll), ("rig-bench-sim-poll.json", sim_poll)):
            if doc is not None:
                with open(os.path.join(d, name), "w") as f:
                    json.dump(doc, f)
        out = subprocess.run([sys.executable, os.path.join(HERE, "gpu_targets.py"), d], capture_output=True,
                             text=True, check=True).stdout
    return {line.split(":")[0]: line for line in out.splitlines()}


def bench(h2d, d2h, d2d, p50):
    return {"devices": ["NVIDIA H200 (sm_90)"], "figures": [
        {"name": "h2d", "size": MIB64, "value": h2d}, {"name": "h2d", "size": 1 << 20, "value": 1.0},
        {"name": "d2h", "size": MIB64, "value": d2h}, {"name": "d2d", "size": 1 << 30, "value": d2d},
        {"name": "handover_rtt_p50", "size": 64, "value": p50}]}


LANDING = {"bytes": MIB64, "h2d_pinned_gbs": 55.0, "h2d_pageable_gbs": 9.8, "d2h_pinned_gbs": 55.0,
           "d2h_pageable_gbs": 14.9, "d2d_gbs": 1000.0, "tiny_h2d_sync_p50_us": 6.0, "register_ms": 2.4}


def verdicts(lines):
    return [l.rsplit("-> ", 1)[-1] if l.endswith(("-> met", "-> MISSED")) else "not judged"
            for k, l in sorted(lines.items()) if k.startswith(("host -> ", "device -> ", "tiny "))]


def main():
    sim = bench(10.0, 10.0, 5.0, 30.0)
    # Inside every bound: 0.91x, 0.91x, 0.81x, 30 + 1.5 x 6 = 39 us.
    inside = run(bench(9.1, 9.1, 810.0, 38.9), sim, LANDING)
    assert verdicts(inside) == ["met"] * 4, inside
    # Outside every bound.
    outside = run(bench(8.9, 8.9, 790.0, 39.1), sim, LANDING)
    assert verdicts(outside) == ["MISSED"] * 4, outside
    # No landing figures: the two targets that need them are not judged.
    partial = run(bench(9.1, 9.1, 810.0, 38.9), sim, None)
    assert verdicts(partial).count("not judged") == 2, partial
    # The polling mode's figures: information beside the targets, with the same bound.
    polled = run(bench(9.1, 9.1, 810.0, 38.9), sim, LANDING, bench(9.1, 9.1, 810.0, 20.0), bench(10.0, 10.0, 5.0, 12.0))
    assert verdicts(polled) == ["met"] * 4, polled
    info = polled.get("(information) with the polling mode on both ends", "")
    assert "on a GPU 20.0 us, simulated 12.0 us" in info and "12.0 + 1.5 x 6.0 = 21.0 us" in info, polled
    # The TCP stream's landing: information, each way's figure named.
    streamed = run(bench(9.1, 9.1, 810.0, 38.9), sim, dict(LANDING, chunk=4 << 20, tcp_stream_gbs=9.5,
                   tcp_landed_whole_gbs=8.1, tcp_landed_chunked_gbs=9.4, tcp_landed_staged_gbs=7.0,
                   tcp_landed_pageable_gbs=5.0))
    line = streamed.get("a TCP stream landed in GPU 0, 67108864 B at a time", "")
    assert all(f in line for f in ("alone 9.50 GB/s", "copied 8.10", "4194304 B chunks as they come (the agent, where it may) 9.40",
                                   "bounce buffer 7.00", "pageable chunks 5.00")), streamed
    print("gpu_targets_test: the bounds are judged as the issue states them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
