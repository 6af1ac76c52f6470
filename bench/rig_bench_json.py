"""Reading rig-bench's JSON (`rig-bench --json`) and naming its sizes: shared by compare.py,
cost_rounds.py, gpu_targets.py and ab_rounds.py, which run beside it (the bench bundle carries
it in bench/ with them)."""
import json
import sys


def load(path, who, stream=None):
    """The JSON document at path; None, after saying why on stream (stderr by default), when it
    cannot be read or parsed."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{who}: {path}: {e}", file=stream or sys.stderr)
        return None


def size_text(n):
    """4096 -> "4 KiB", 67108864 -> "64 MiB", 1000 -> "1000 B"."""
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or n % 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} GiB"


def figures_of(run):
    """(name, size) -> figure of a rig-bench JSON (none for None)."""
    return {(f["name"], f["size"]): f for f in (run or {}).get("figures", [])}
