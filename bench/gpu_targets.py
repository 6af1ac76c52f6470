#!/usr/bin/env python3
"""Issue 10's targets from one GPU check's results (scripts/gpu-check writes them):
rig-bench-cuda.json and rig-bench-sim.json (rig-bench --quick with the agent's devices on CUDA
and on simulated devices, the same run) and landing.json (rig-gpu-landing on GPU 0); for
information, rig-bench-cuda-poll.json and rig-bench-sim-poll.json (the tiny handovers with the
polling mode on both ends, RIG_POLL_US).

  bench/gpu_targets.py RESULTS

Prints each target with its figures, ratio and verdict, then the landing figures beside the
transfers; a figure that is missing is said so (its target is then not judged). Exit 0 always:
the check's verdict is gpu-check's, the targets are reported beside it."""
import os
import sys

import rig_bench_json

MIB64 = 64 << 20


def load(path):
    # On stdout, which scripts/gpu-check keeps in targets.txt with the verdicts.
    return rig_bench_json.load(path, "gpu-targets", sys.stdout)


def figure(run, name, size=None):
    if run is None:
        return None
    for f in run.get("figures", []):
        if f.get("name") == name and (size is None or f.get("size") == size):
            return f.get("value")
    return None


def judge(label, ours, reference, ok, text):
    if not ours or not reference:  # missing, or zero: nothing to judge
        print(f"{label}: not judged (a figure is missing)")
        return
    print(f"{label}: {text} -> {'met' if ok(ours, reference) else 'MISSED'}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    results = sys.argv[1]
    cuda = load(os.path.join(results, "rig-bench-cuda.json"))
    sim = load(os.path.join(results, "rig-bench-sim.json"))
    landing = load(os.path.join(results, "landing.json"))
    if cuda is not None:
        print("devices on CUDA:", ", ".join(cuda.get("devices", [])) or "(none named)")

    for name, what in (("h2d", "host -> device 64 MiB into GPU memory"), ("d2h", "device -> host 64 MiB from GPU memory")):
        c, s = figure(cuda, name, MIB64), figure(sim, name, MIB64)
        judge(f"{what} >= 0.9x simulated", c, s, lambda a, b: a >= 0.9 * b,
              f"{c:.2f} GB/s against {s:.2f} GB/s = {c / s:.2f}x" if c and s else "")

    c = figure(cuda, "d2d")
    d2d = landing.get("d2d_gbs") if landing else None
    judge("device -> device on the agent >= 0.8x cuMemcpy within the GPU", c, d2d, lambda a, b: a >= 0.8 * b,
          f"{c:.1f} GB/s against {d2d:.1f} GB/s = {c / d2d:.2f}x" if c and d2d else "")

    c, s = figure(cuda, "handover_rtt_p50"), figure(sim, "handover_rtt_p50")
    tiny = landing.get("tiny_h2d_sync_p50_us") if landing else None
    if c and s and tiny:
        bound = s + 1.5 * tiny
        judge("tiny handover p50 on a GPU <= simulated p50 + 1.5x the 64-byte copy-and-sync p50", c, bound,
              lambda a, b: a <= b, f"{c:.1f} us against {s:.1f} + 1.5 x {tiny:.1f} = {bound:.1f} us")
    else:
        print("tiny handover p50 on a GPU: not judged (a figure is missing)")

    # Information: the same bound with both ends polling (the agent then learns a GPU's
    # completion by cuEventQuery as it spins, not by the host function's wake).
    cuda_poll = load(os.path.join(results, "rig-bench-cuda-poll.json"))
    sim_poll = load(os.path.join(results, "rig-bench-sim-poll.json"))
    c, s = figure(cuda_poll, "handover_rtt_p50"), figure(sim_poll, "handover_rtt_p50")
    if c and s and tiny:
        print(f"(information) with the polling mode on both ends: tiny handover p50 on a GPU {c:.1f} us, "
              f"simulated {s:.1f} us; the same bound {s:.1f} + 1.5 x {tiny:.1f} = {s + 1.5 * tiny:.1f} us")

    keys = ("bytes", "h2d_pinned_gbs", "h2d_pageable_gbs", "d2h_pinned_gbs", "d2h_pageable_gbs", "d2d_gbs",
            "tiny_h2d_sync_p50_us", "register_ms")
    if landing and all(k in landing for k in keys):
        print("landing (GPU 0, {bytes} B): h2d pinned {h2d_pinned_gbs:.1f} / pageable {h2d_pageable_gbs:.1f} GB/s, "
              "d2h pinned {d2h_pinned_gbs:.1f} / pageable {d2h_pageable_gbs:.1f} GB/s, d2d {d2d_gbs:.0f} GB/s, "
              "64 B h2d + sync p50 {tiny_h2d_sync_p50_us:.1f} us, registering {register_ms:.2f} ms".format(**landing))
    if landing and "tiny_h2d_host_function_p50_us" in landing:
        print("64 B h2d learned done (GPU 0), p50 / p99: synchronised {tiny_h2d_sync_p50_us:.1f} / "
              "{tiny_h2d_sync_p99_us:.1f} us, event polled {tiny_h2d_event_poll_p50_us:.1f} / "
              "{tiny_h2d_event_poll_p99_us:.1f} us, host function's wake {tiny_h2d_host_function_p50_us:.1f} / "
              "{tiny_h2d_host_function_p99_us:.1f} us".format(**landing))
    if landing and "tcp_landed_chunked_gbs" in landing:
        print("a TCP stream landed in GPU 0, {bytes} B at a time: the stream alone {tcp_stream_gbs:.2f} GB/s; "
              "received whole then copied {tcp_landed_whole_gbs:.2f}, copied by {chunk} B "
              "chunks as they come (the agent, where it may) {tcp_landed_chunked_gbs:.2f}, through a bounce buffer "
              "{tcp_landed_staged_gbs:.2f}, from pageable chunks {tcp_landed_pageable_gbs:.2f}".format(**landing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
