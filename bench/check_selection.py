#!/usr/bin/env python3
"""ctest rig_bench_measures_only_the_figures_and_sizes_asked: rig-bench --figures and --sizes
(one figure at one size, for a cost hunt or a profile, rather than the whole sweep) run the
figures asked at the sizes asked and nothing else, and the JSON says what was asked; and
--handovers-only is --figures handovers. Short runs against rig-bench's own agent.
Usage: check_selection.py RIG_BENCH JSON_PATH"""
import json
import subprocess
import sys

bench, path = sys.argv[1], sys.argv[2]
SHORT = ["--min-time", "0.02", "--batch-bytes", "1MiB", "--d2d-bytes", "1MiB", "--rtt-count", "50",
         "--pipeline", "64", "--threads", "2"]


def run(args):
    r = subprocess.run([bench, *SHORT, *args, "--json", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"rig-bench {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    return json.load(open(path))


problems = []
j = run(["--figures", "d2h,d2d", "--sizes", "4KiB,256KiB"])
got = sorted((f["name"], f["size"]) for f in j["figures"])
want = [("d2d", 1 << 20), ("d2h", 4096), ("d2h", 256 << 10)]
if got != want:
    problems.append(f"--figures d2h,d2d --sizes 4KiB,256KiB measured {got}, not {want}")
if j.get("figures_asked") != ["d2h", "d2d"] or j.get("max_size") != 256 << 10:
    problems.append(f"the JSON says figures_asked {j.get('figures_asked')!r}, max_size {j.get('max_size')!r}")

j = run(["--handovers-only"])
names = {f["name"] for f in j["figures"]}
if not names or any(not n.startswith("handover") for n in names) or j.get("figures_asked") != ["handovers"]:
    problems.append(f"--handovers-only measured {sorted(names)} (figures_asked {j.get('figures_asked')!r})")

for bad in (["--sizes", "1MiB", "--max-size", "4MiB"], ["--figures", "h2d", "--handovers-only"], ["--figures", "nope"]):
    r = subprocess.run([bench, *bad], capture_output=True, text=True, timeout=30)
    if r.returncode == 0 or "excludes" not in r.stderr and "not in" not in r.stderr:
        problems.append(f"rig-bench {' '.join(bad)}: exit {r.returncode}, said {r.stderr!r}")

if problems:
    sys.exit("\n".join(problems))
print("rig-bench ran the figures and sizes asked, and only those")
