"""In-process speed of the online learner (jaxbandits.online): decisions per second in batches of
1000 and single-decision latency (p50 / p99), UCB1 on an attributed channel.

    python benchmarks/online.py [--reps 200]
"""
import argparse
import time

import jax
import numpy as np

from jaxbandits import channels, online
from jaxbandits.policies import classic


def main(reps=200):
    st = online.init(classic.ucb1(), channels.attributed(), 10, 0, max_pending=4096)
    st, ids, arms = online.decide(st, n=1000)  # compile
    st, ids, arms = online.decide(st, n=1)
    jax.block_until_ready(arms)
    t0 = time.perf_counter()
    for _ in range(max(reps // 10, 5)):
        st, ids, arms = online.decide(st, n=1000)
    jax.block_until_ready(arms)
    n = max(reps // 10, 5) * 1000
    rate = n / (time.perf_counter() - t0)
    lat = []
    for _ in range(reps):
        t = time.perf_counter()
        st, ids, arms = online.decide(st, n=1)
        int(arms[0])  # the caller needs the arm: include the transfer
        lat.append(time.perf_counter() - t)
    lat = np.array(lat) * 1e3
    print(f"UCB1 batch of 1000: {rate:,.0f} decisions/s; single decision: p50 {np.percentile(lat, 50):.3f} ms, "
          f"p99 {np.percentile(lat, 99):.3f} ms ({reps} calls)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    main(ap.parse_args().reps)
