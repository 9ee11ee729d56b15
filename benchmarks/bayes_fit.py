"""Offline fit at scale: ``load_log`` (CSV) + ``fit`` (Weibull joint model, NUTS, 4 vectorised
chains x 1000 draws after 500 warmup) + writing the posterior file, for logs of 1e4 / 1e5 / 1e6
plays (3 arms, p = 0.05 / 0.10 / 0.15, Weibull delays of mean 50 and shape 1.5, plays uniform on
[0, 1000), observed at 1000), side by side with a lifelines maximum-likelihood mixture-cure Weibull
fit of the same data (one per arm: lifelines' ``MixtureCureFitter`` has no covariates). Each
measurement runs in a fresh process: wall time, CPU time and peak RSS (``resource.getrusage``).

    python benchmarks/bayes_fit.py [--sizes 10000 100000 1000000] [--out benchmarks/results/bayes_fit.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD_FIT = r"""
import json, os, resource, sys, time
cfg = json.loads(sys.argv[1])
t0 = time.time(); c0 = time.process_time()
from jaxbandits import bayes as B
log = B.load_log(cfg["csv"])
t_load = time.time() - t0
idata = B.fit(log, "weibull", num_chains=4, num_warmup=500, num_samples=1000, seed=0, resolution=cfg["resolution"])
idata.to_netcdf(cfg["nc"])
wall = time.time() - t0
post = idata.posterior
d = B.diagnostics(idata)
print(json.dumps({"what": "jaxbandits NUTS", "n": len(log), "wall_s": wall, "load_s": t_load,
                  "cpu_s": time.process_time() - c0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "file_mb": os.path.getsize(cfg["nc"]) / 1e6, "distinct_rows": int(post.attrs["n_distinct_rows"]),
                  "resolution": post.attrs["resolution"],
                  "p": [round(float(x), 4) for x in post["p"].mean(("chain", "draw")).values],
                  "delay_mean": round(float(post["delay_mean"].mean()), 3), "delay_shape": round(float(post["delay_shape"].mean()), 4),
                  "r_hat_max": d["r_hat_max"], "divergences": d["divergences"]}))
"""

CHILD_LIFELINES = r"""
import json, math, resource, sys, time, warnings
cfg = json.loads(sys.argv[1])
t0 = time.time(); c0 = time.process_time()
import numpy as np, pandas as pd
from lifelines import MixtureCureFitter, WeibullFitter
df = pd.read_csv(cfg["csv"])
seen = df["conversion_time"].notna() & (df["conversion_time"] <= df["cutoff"])
T = np.where(seen, df["conversion_time"] - df["play_time"], df["cutoff"] - df["play_time"])
T = np.maximum(T, 1e-6)
ps, means, shapes, ns = [], [], [], []
for k in sorted(df["arm"].unique()):
    sel = (df["arm"] == k).to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = MixtureCureFitter(base_fitter=WeibullFitter()).fit(T[sel], seen.to_numpy()[sel])
    lam, rho = float(f.lambda_), float(f.rho_)
    ps.append(1 - float(f.cured_fraction_)); means.append(lam * math.gamma(1 + 1 / rho)); shapes.append(rho); ns.append(sel.sum())
w = np.asarray(ns) / np.sum(ns)
print(json.dumps({"what": "lifelines MLE (mixture-cure Weibull, per arm)", "n": int(len(df)), "wall_s": time.time() - t0,
                  "cpu_s": time.process_time() - c0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "file_mb": None,
                  "p": [round(x, 4) for x in ps], "delay_mean": round(float(np.dot(w, means)), 3),
                  "delay_shape": round(float(np.dot(w, shapes)), 4), "per_arm_delay_mean": [round(x, 2) for x in means]}))
"""


def child(code, cfg):
    r = subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], capture_output=True, text=True)
    if r.returncode:
        print(r.stderr[-3000:], file=sys.stderr)
        raise SystemExit(1)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--resolution", default="auto")
    ap.add_argument("--no-lifelines", action="store_true")
    ap.add_argument("--out", default="benchmarks/results/bayes_fit.json")
    a = ap.parse_args()
    from jaxbandits import bayes as B

    res = a.resolution if a.resolution == "auto" else (None if a.resolution == "exact" else float(a.resolution))
    rows = []
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} (machine with {os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.sizes:
            log = B.synthetic_log([0.05, 0.10, 0.15], n, span=1000, cutoff=1000, delay="weibull", mean=50, shape=1.5, seed=1)
            csv = os.path.join(tmp, f"log{n}.csv")
            B.write_log(csv, log)
            todo = [(CHILD_FIT, {"csv": csv, "nc": os.path.join(tmp, f"post{n}.nc"), "resolution": res})]
            if not a.no_lifelines:
                todo.append((CHILD_LIFELINES, {"csv": csv}))
            for code, cfg in todo:
                row = child(code, cfg)
                row["load_avg_1min"] = os.getloadavg()[0]
                rows.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    print("\n| plays | tool | wall s | CPU s | peak RSS MiB | file MB | p | delay mean | shape |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        fm = "—" if r["file_mb"] is None else f"{r['file_mb']:.2f}"
        print(f"| {r['n']:.0e} | {r['what']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mib']:.0f} | {fm} | "
              f"{' / '.join(f'{x:.3f}' for x in r['p'])} | {r['delay_mean']:.2f} | {r['delay_shape']:.3f} |")


if __name__ == "__main__":
    main()
