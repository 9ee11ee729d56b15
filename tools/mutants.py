"""Curated mutation testing: apply each mutant of a list to a private copy of the working tree and
run the tests that cover it; a mutant is *killed* when those tests fail.

Why curated rather than mutmut / cosmic-ray: every test process of this project pays JAX's
compile time (seconds to a minute per test module), so a tool that generates thousands of
mutants and reruns the suite for each is impractical on 2 cores. Each mutant here is a
plausible bug written by hand (a wrong sign, an off-by-one, a swapped argument, a dropped term),
and names the test files that exercise its code; ``--full`` runs the whole default suite instead.

Mutant files are JSON lists in ``tools/mutants/*.json``::

    {"id": "classic-ts-half-failures",
     "file": "jaxbandits/policies/classic.py",
     "old": "b = prior_b + jnp.maximum(n - state.sums, 0.0)",   # must occur exactly once
     "new": "b = prior_b + 0.5 * jnp.maximum(n - state.sums, 0.0)",
     "tests": ["tests/policies/test_classic.py"],
     "equivalent": false,            # true: behaviour-preserving, reported apart (with "note")
     "note": "why it is equivalent, or which test kills it"}

Usage (from the repository root)::

    python tools/mutants.py                      # every mutant of tools/mutants/*.json
    python tools/mutants.py tools/mutants/classic.json --id classic-ts-half-failures
    python tools/mutants.py --jobs 2 --rev HEAD --report mutation_report.json

The working tree itself is never modified: each mutant runs in a copy (of the working tree, or of
the commit ``--rev``) under a temporary folder, with that copy first on PYTHONPATH. Programs that
a mutant does not change are compiled once for the whole run (JAX's persistent compilation cache
in ``.mutants_cache/``).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(paths):
    muts = []
    for p in paths:
        with open(p) as f:
            for m in json.load(f):
                m["source"] = os.path.relpath(p, ROOT)
                muts.append(m)
    ids = [m["id"] for m in muts]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise SystemExit(f"duplicate mutant ids: {sorted(dup)}")
    return muts


def tracked_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split("\n")
    return [f for f in out if f and os.path.isfile(os.path.join(ROOT, f))]


def copy_tree(dst, files):
    for f in files:
        if not os.path.isfile(os.path.join(ROOT, f)):  # removed since the list was taken
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(dst, f))


def export_rev(dst, rev):
    """The tree of commit ``rev`` (not the working tree) into ``dst``."""
    arch = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-xf", "-", "-C", dst], input=arch, check=True)


def run_one(m, files, full, timeout, cache=None, rev=None):
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="mutant_") as tmp:
        if rev:
            export_rev(tmp, rev)
        else:
            copy_tree(tmp, files)
        path = os.path.join(tmp, m["file"])
        src = open(path).read()
        n = src.count(m["old"])
        if n != 1:
            return dict(m, status="invalid", why=f"'old' occurs {n} times in {m['file']}", seconds=0.0)
        open(path, "w").write(src.replace(m["old"], m["new"]))
        tests = [] if full else m["tests"]
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", *tests]
        env = dict(os.environ, PYTHONPATH=tmp, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
        if cache:  # programs a mutant does not touch compile once for the whole run
            env.update(JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
        try:
            r = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
            rc, tail = r.returncode, (r.stdout + r.stderr)[-1500:]
        except subprocess.TimeoutExpired:
            rc, tail = -1, "timeout"
    status = "killed" if rc not in (0, 5) else "survived"
    if rc == 5:
        tail = "no test collected: " + tail
    failed = [ln.split(" ")[1] for ln in tail.splitlines() if ln.startswith("FAILED ") or ln.startswith("ERROR ")]
    return dict(m, status=status, rc=rc, failed=failed[:3], seconds=round(time.time() - t0, 1),
                tail=tail if status != "killed" else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="mutant lists (default: tools/mutants/*.json)")
    ap.add_argument("--id", action="append", help="run only these mutant ids")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    ap.add_argument("--full", action="store_true", help="run the whole default suite for each mutant")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per mutant")
    ap.add_argument("--report", help="write the results as JSON here")
    ap.add_argument("--rev", help="mutate this commit's tree (e.g. HEAD) instead of the working tree")
    ap.add_argument("--cache", default=os.path.join(ROOT, ".mutants_cache"),
                    help="JAX persistent compilation cache shared by the mutants ('' to turn it off)")
    a = ap.parse_args(argv)
    paths = a.files or sorted(glob.glob(os.path.join(ROOT, "tools", "mutants", "*.json")))
    muts = load(paths)
    if a.id:
        muts = [m for m in muts if m["id"] in set(a.id)]
    files = tracked_files()
    if a.rev:  # pin the commit: later commits during the run do not change what is mutated
        a.rev = subprocess.run(["git", "rev-parse", a.rev], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.strip()
        print(f"mutating the tree of commit {a.rev}", flush=True)
    res = []
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for r in ex.map(lambda m: run_one(m, files, a.full, a.timeout, a.cache, a.rev), muts):
            eq = " (equivalent)" if r.get("equivalent") else ""
            print(f"{r['status']:9s} {r['seconds']:7.1f}s  {r['id']}{eq}  {' '.join(r.get('failed', []))}", flush=True)
            if r["status"] != "killed" and r.get("tail"):
                print("          " + r["tail"].strip().splitlines()[-1][:200])
            res.append(r)
    live = [r for r in res if not r.get("equivalent") and r["status"] != "invalid"]
    killed = sum(r["status"] == "killed" for r in live)
    eq = sum(bool(r.get("equivalent")) for r in res)
    inv = sum(r["status"] == "invalid" for r in res)
    print(f"\n{len(res)} mutants: {killed}/{len(live)} non-equivalent killed"
          f" ({100.0 * killed / max(len(live), 1):.1f}%), {eq} equivalent, {inv} invalid")
    if a.report:
        with open(a.report, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if inv == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
