"""Run one benchmark configuration in a fresh Python process (its own XLA devices and peak
memory) and return the JSON line it prints last."""
import json
import subprocess
import sys


def run_child(code: str, cfg: dict) -> dict:
    r = subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], capture_output=True, text=True)
    if r.returncode:
        print(r.stderr[-3000:], file=sys.stderr)
        raise SystemExit(1)
    row = json.loads(r.stdout.strip().splitlines()[-1])
    row["run_steps_per_s"] = row["runs"] * row["T"] / row["run_s"]
    return row
