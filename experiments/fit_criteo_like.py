"""Fit the heavy-tailed stand-in for the rescaled Criteo delays (Vernade et al. 2020, Fig. 2): a
point mass P(D = 0) = 0.073 plus a two-component mixture of floored log-normals, by least squares on
the statistics in `jaxbandits.core.delays.CRITEO_STATS` (relative errors of the mean and median, absolute
errors of the CDF points), with a small Nelder-Mead written here (numpy only). Prints the parameters
that `jaxbandits.core.delays.CRITEO_FIT` holds and the fitted statistics.

    python experiments/fit_criteo_like.py
"""
import math

import numpy as np

S = {"mean": 5720.0, "median": 2913.0, "p0": 0.073, 500: 0.31, 2000: 0.445, 5000: 0.60, 10000: 0.76}
ERF = np.vectorize(math.erf)


def cdf(n, p0, w, mu, s):
    z = (np.log(np.asarray(n, np.float64) + 1.0)[..., None] - mu) / s
    return p0 + (1 - p0) * np.sum(w * 0.5 * (1 + ERF(z / math.sqrt(2))), axis=-1)


def stats(theta):
    w1 = 1 / (1 + math.exp(-theta[0]))
    w, mu, s = np.array([w1, 1 - w1]), np.array(theta[1:3]), np.exp(theta[3:5])
    n = np.arange(0, 400_000)
    c = cdf(n, S["p0"], w, mu, s)
    mean = float(np.sum(1 - c))
    median = float(np.searchsorted(c, 0.5))
    return {"mean": mean, "median": median, **{k: float(c[k]) for k in (500, 2000, 5000, 10000)}}, (w, mu, s)


def loss(theta):
    st, _ = stats(theta)
    r = [(st["mean"] - S["mean"]) / S["mean"], (st["median"] - S["median"]) / S["median"]]
    r += [st[k] - S[k] for k in (500, 2000, 5000, 10000)]
    return float(np.sum(np.square(r)))


def nelder_mead(f, x0, steps=400, scale=0.5):
    n = len(x0)
    pts = [np.array(x0, float)] + [np.array(x0, float) + scale * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(steps):
        order = np.argsort(vals)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0] + 0.5 * (p - pts[0]) for p in pts]
                vals = [f(p) for p in pts]
    i = int(np.argmin(vals))
    return pts[i], vals[i]


if __name__ == "__main__":
    x, v = nelder_mead(loss, [-0.5, 5.0, 8.5, 0.0, 0.0])
    st, (w, mu, s) = stats(x)
    print("loss", v)
    print("CRITEO_FIT = {'p0': 0.073, 'weights': %s, 'mus': %s, 'sigmas': %s}" % (
        [round(float(a), 4) for a in w], [round(float(a), 4) for a in mu], [round(float(a), 4) for a in s]))
    for k, target in S.items():
        if k != "p0":
            print(f"{k!s:>8}: fitted {st[k]:.4g}  target {target}")
