"""Every algorithm of the five papers beside a plain ``jax.vmap(lax.scan)`` of the same algorithm,
in one process, on the same world and channel (issue 28, item 3).

For each algorithm ``ALGOS[name]`` holds

* ``setup(K, T) -> (env, channel, policy)``: the library's components (the world and channel of
  the algorithm's paper as the tests and reproductions use them, at modest sizes);
* ``plain(K, T, n_rec) -> run_one(key, run_id) -> regret[R]``: a hand-written plain scan of the
  same algorithm, about 20-40 lines: the minimal state arrays; per round draw the world, act,
  update, add the pseudo-regret; the regret recorded at the library's record points
  (``record = max(1, T // n_rec)``) by an outer scan over record points and an inner scan over the
  rounds between them. Plain scans use the world's streams as the library does (run ``r`` keyed
  by ``fold_in(key, r)``, the REWARD / DELAY / WORLD / act streams of conventions §8), the math
  primitives of ``jaxbandits.core.mathlib`` (uniforms, tie rule, Poisson KL-UCB, exp-weights) and the
  world's delay law (``law.draw``); never the library's policy, engine or channel code, except
  the host-side tuning tables that a policy computes once before compiling (ODAAF's schedule
  ``anonymous.schedule``, ARS-EXP3's block table and gamma): they are constants of the
  algorithm, not its rounds. Delayed feedback travels through a calendar written in the natural
  order (insert at ``t + d``, read slot ``t``, clear it); composite sums through a vector of the
  mass landing at ``t, t+1, ...``.

The two agree in law (``measure`` reports the z score of the difference of the mean final
regrets; tests/test_plain_scans.py checks |z| < 4 for each); many take the very same actions.

``measure(name, n_runs, T)`` times the library's ``simulate(..., path="scan",
delayed_regret=False)`` (the plain scans do not track L(t) either) on a second identical call and
the plain scan's compiled program, both end to end (the regret records on the host).

    python benchmarks/plain_scans.py                                   # CPU: 200 runs x 1000 rounds
    python benchmarks/plain_scans.py --algos Exp3 DEW --runs 1000000 --horizon 10000 --out gpu.json

Skipped: the delay-model TS (``bayes.delay_model_ts``): its refresh is a Newton step and an HMC
transition on the potential of the library's NumPyro conversion model; a plain scan of the same
algorithm would re-derive that censored likelihood, its gradient and Hessian and the transition by
hand (hundreds of lines, not a plain scan), so it has no row here.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from typing import Callable, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

import jaxbandits as jb
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import mathlib as M
from jaxbandits.policies import adversarial as A
from jaxbandits.policies import anonymous as AN
from jaxbandits.policies import classic as CL
from jaxbandits.policies import composite as W
from jaxbandits.policies import conversions as CV
from jaxbandits.policies import linear as LI

_F, _I = jnp.float32, jnp.int32
#: the plain scans' per-round ``fold_in``: ``jax.random.fold_in`` (what a user writes, the default)
#: or ``mathlib.fold_in`` (the engine's written-out Threefry: the same bits, another lowering)
FOLDS = {"jax": jax.random.fold_in, "mathlib": M.fold_in}
_FOLD = ["jax"]


def fold(key, data):
    return FOLDS[_FOLD[0]](key, data)


class Algo(NamedTuple):
    setup: Callable  # (K, T) -> (env, channel, policy): the library's
    plain: Callable  # (K, T, n_rec) -> run_one(key, run_id) -> regret[R]
    world: str  # the world and channel, in words
    check: tuple = (10, 300)  # (K, T) of the statistical test (tests/test_plain_scans.py)


# ----------------------------------------------------------------------------- shared pieces
class Streams(NamedTuple):
    rew: object
    dly: object
    world: object
    act: object
    init: object  # the policy's init key


def streams(key, r) -> Streams:
    """The stream keys of run ``r`` (conventions §8)."""
    k_run = fold(key, r)
    k_env, k_pol = fold(k_run, 0), fold(k_run, 1)
    return Streams(fold(k_env, 1), fold(k_env, 2), fold(k_env, 4), fold(k_pol, 1), fold(k_pol, 0))


def round_draws(s: Streams, t, law):
    """The round's reward uniform, delay, world key and act key."""
    return (M.uniform(fold(s.rew, t)), law.draw(M.uniform(fold(s.dly, t)), t), fold(s.world, t),
            fold(s.act, t))


def recorded(step, c0, T, n_rec, metric):
    """``lax.scan`` of ``step`` over rounds ``0..T-1``, ``metric(carry)`` recorded after rounds
    ``k-1, 2k-1, ...`` and ``T-1`` (``k = max(1, T // n_rec)``: the library's ``record=k``)."""
    k = stride(T, n_rec)
    nb, tail = divmod(T, k)

    def block(c, b):
        c = lax.scan(step, c, b * k + jnp.arange(k, dtype=_I))[0]
        return c, metric(c)

    c, recs = lax.scan(block, c0, jnp.arange(nb, dtype=_I))
    if tail:
        c = lax.scan(step, c, nb * k + jnp.arange(tail, dtype=_I))[0]
        recs = jnp.concatenate([recs, metric(c)[None]])
    return recs


def stride(T, n_rec):
    return max(1, T // n_rec)


def calendar(cal, t, d, value):
    """Natural order: the play's value lands at round ``t + d``; slot ``t`` is read and cleared."""
    Wd = cal.shape[0]
    cal = cal.at[(t + d) % Wd].add(value)
    return cal.at[t % Wd].set(0.0), cal[t % Wd]


def onehot(a, K):
    return (jnp.arange(K) == a).astype(_F)


# ----------------------------------------------------------------------------- worlds
def adv_world(K):
    """Thune et al.'s Bern(K, 0.1) losses (arm 0 best), delays uniform on {0..10}."""
    return E.bernoulli_losses(K, 0.1, delays=D.uniform(0, 10))


def adv_row(env, kw):
    """Every arm's reward of the round: independent Bernoulli(1 - loss mean) from the WORLD key."""
    return (M.uniforms(fold(kw, 0), env.n_arms) < env.rewards[0]).astype(_F)


def sto_means(K):
    return np.linspace(0.1, 0.9, K).astype(np.float32)


def odaaf_means(K):
    """Pike-Burke et al.-style close arms: eliminations at the end of phase 1 are random."""
    return np.concatenate([[0.9], np.linspace(0.45, 0.3, K - 1)]).astype(np.float32)


ODAAF_DELAY = (0, 6)  # uniform delays: mean 3, variance 4, bound 6
CONV_DELAY_MEAN, CONV_WINDOW = 10.0, 20
COMP_L = 10  # composite: a pull's reward spread evenly over lags 0..9


def lin_world(K, d=5):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, (K, d)).astype(np.float64)
    x[x.sum(1) == 0, 0] = 1.0
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    theta = np.array([0.6, 0.3, 0.2, 0.1, 0.05][:d])
    return x.astype(np.float32), theta.astype(np.float32)


def adv_metric(c):
    return jnp.max(c[-2]) - c[-1]  # max_a G_a(t) - realised reward


# ----------------------------------------------------------------------------- adversarial (Thune et al. 2019, Exp3)
def dew_eta(K, T):
    """Theorem 1's rate with the total delay D = 5 T of the world's uniform{0..10} delays."""
    return math.sqrt(math.log(K) / (math.e * K * T / 2 + 5 * T))


SKIP_BETA = 5.0


def plain_exp_weights(kind):
    """Exp3 (cumulative importance-weighted losses), DEW (normalised log-probabilities) and
    Skipper-DEW (DEW dropping the feedback of delay >= beta) as one plain scan each."""

    def make(K, T, n_rec):
        env = adv_world(K)
        law, Wd = env.delay, env.delay.support_max + 1
        eta = {"exp3": math.sqrt(2 * math.log(K) / (K * T)), "dew": dew_eta(K, T),
               "skipper": 1 / (4 * math.e * SKIP_BETA)}[kind]

        def run(key, r):
            s = streams(key, r)

            def step(c, t):
                w, cal, G, R = c
                _, d, kw, ka = round_draws(s, t, law)
                row = adv_row(env, kw)
                if kind == "exp3":  # w = cumulative losses
                    p = M.exp_weights_probs(w, eta)
                    a = M.sample_from_probs(p, M.uniform(ka))
                    cal, got = calendar(cal, t, d, onehot(a, K) * (1.0 - row[a]) / p[a])
                    w = w + got
                else:  # w = log-probabilities
                    a = M.sample_from_probs(jnp.exp(w), M.uniform(ka))
                    keep = (d < SKIP_BETA) if kind == "skipper" else True
                    cal, got = calendar(cal, t, d, onehot(a, K) * (1.0 - row[a]) * jnp.exp(-w[a]) * keep)
                    w = M.log_normalize(w - jnp.minimum(eta * got, 1e30))
                return (w, cal, G + row, R + row[a]), None

            w0 = jnp.zeros((K,), _F) if kind == "exp3" else jnp.full((K,), -math.log(K), _F)
            c0 = (w0, jnp.zeros((Wd, K), _F), jnp.zeros((K,), _F), jnp.zeros((), _F))
            return recorded(step, c0, T, n_rec, adv_metric)

        return run

    return make


def plain_doubling(K, T, n_rec):
    """The doubling scheme: epochs m, beta_m = 2^(m/2)/(4e ln K), eta_m = ln K / 2^(m/2); a
    restart resets the weights and drops every pending feedback (the calendar is cleared)."""
    env = adv_world(K)
    law, Wd, lnk = env.delay, env.delay.support_max + 1, math.log(K)

    def run(key, r):
        s = streams(key, r)

        def step(c, t):
            logp, m, sg, ns, ds, cal, G, R = c
            _, d, kw, ka = round_draws(s, t, law)  # the delay is revealed before acting
            row, df = adv_row(env, kw), d.astype(_F)

            def tent(m, sg, ns, ds):
                skip = df >= jnp.exp2(m.astype(_F) / 2.0) / (4 * math.e * lnk)
                s2, n2, d2 = sg + 1.0, ns + skip, ds + jnp.where(skip, 0.0, df)
                ok = jnp.maximum(n2 * n2, (math.e * K * s2 / 2.0 + d2) * lnk) <= jnp.exp2(m.astype(_F))
                return ok, skip, s2, n2, d2

            z = jnp.zeros((), _F)
            m2, sg, ns, ds = lax.while_loop(lambda c: ~tent(*c)[0], lambda c: (c[0] + 1, z, z, z), (m, sg, ns, ds))
            _, skip, sg, ns, ds = tent(m2, sg, ns, ds)
            logp = jnp.where(m2 > m, -lnk, logp)
            cal = jnp.where(m2 > m, 0.0, cal)
            a = M.sample_from_probs(jnp.exp(logp), M.uniform(ka))
            cal, got = calendar(cal, t, d, onehot(a, K) * (1.0 - row[a]) * jnp.exp(-logp[a]) * ~skip)
            eta = lnk / jnp.exp2(m2.astype(_F) / 2.0)
            logp = M.log_normalize(logp - jnp.minimum(eta * got, 1e30))
            return (logp, m2, sg, ns, ds, cal, G + row, R + row[a]), None

        z = jnp.zeros((), _F)
        c0 = (jnp.full((K,), -lnk, _F), jnp.zeros((), _I), z, z, z, jnp.zeros((Wd, K), _F), jnp.zeros((K,), _F), z)
        return recorded(step, c0, T, n_rec, adv_metric)

    return run


# ----------------------------------------------------------------------------- Pike-Burke et al. 2018
ODAAF_KINDS = {  # name: (schedule kind, bridge)
    "ODAAF": ("odaaf", False), "ODAAF-B": ("odaaf_b", True), "ODAAF-V": ("odaaf_v", True),
    "ODAAF-naive": ("naive", False)}


def odaaf_params():
    law = D.uniform(*ODAAF_DELAY)
    return law, float(law.mean), float(ODAAF_DELAY[1]), float(law.variance)


def plain_odaaf(name):
    """Algorithm 1 of Pike-Burke et al. on the anonymous sums: phases m, blocks of nu_m rounds per
    active arm (observations X_t credited to the block's arm), elimination at the end of Step 1
    with tolerance 2^-m, then (ODAAF-B/V) a bridge of nu_m rounds on the empirical leader."""
    kind, bridge = ODAAF_KINDS[name]

    def make(K, T, n_rec):
        law, mean, bound, var = odaaf_params()
        tab = jnp.asarray(np.minimum(AN.schedule(kind, T, mean, bound, var), 2**30), _I)
        mmax, mu, idx = tab.shape[0] - 1, jnp.asarray(odaaf_means(K)), jnp.arange(K)
        nu = lambda m: tab[jnp.minimum(m, mmax)] - tab[jnp.minimum(m - 1, mmax)]

        def run(key, r):
            s = streams(key, r)

            def step(c, t):
                a, m, br, left, act, S, N, cal, reg = c
                u, d, _, _ = round_draws(s, t, law)
                cal, y = calendar(cal, t, d, (u < mu[a]).astype(_F))
                e = onehot(a, K) * ~br
                S, N, left = S + e * y, N + e, left - 1
                nxt = act & (idx > a)
                go, end1 = ~br & (left == 0) & jnp.any(nxt), ~br & (left == 0) & ~jnp.any(nxt)
                xbar = S / jnp.maximum(N, 1.0)
                best = jnp.max(jnp.where(act, xbar, -jnp.inf))
                act = jnp.where(end1, act & ~(xbar + jnp.ldexp(1.0, -m) < best), act)
                a2 = jnp.where(go, jnp.argmax(nxt), a)
                left2 = jnp.where(go, nu(m), left)
                if bridge:
                    endb = br & (left == 0)
                    a2 = jnp.where(end1, jnp.argmax(jnp.where(act, xbar, -jnp.inf)), a2)
                    a2 = jnp.where(endb, jnp.argmax(act), a2)
                    left2 = jnp.where(end1 | endb, nu(m), left2)
                    br = (br | end1) & ~endb
                else:
                    a2 = jnp.where(end1, jnp.argmax(act), a2)
                    left2 = jnp.where(end1, nu(m + 1), left2)
                return (a2.astype(_I), m + end1, br, jnp.maximum(left2, 1), act, S, N, cal,
                        reg + jnp.max(mu) - mu[a]), None

            zk = jnp.zeros((K,), _F)
            c0 = (jnp.zeros((), _I), jnp.ones((), _I), jnp.asarray(False), tab[1] - tab[0], jnp.ones((K,), bool),
                  zk, zk,
                  jnp.zeros((law.support_max + 1,), _F), jnp.zeros((), _F))
            return recorded(step, c0, T, n_rec, lambda c: c[-1])

        return run

    return make


def plain_qpmd(K, T, n_rec):
    """QPM-D with UCB1 (log of the rewards fed): arrived rewards wait in per-arm queues (count,
    sum); the base's arm J is fed from its queue while it holds something (a value drawn without
    replacement), then J is played."""
    law, _, _, _ = odaaf_params()
    mu = jnp.asarray(sto_means(K))

    def ucb_arm(fc, fs):
        n1 = jnp.maximum(fc, 1.0)
        t = jnp.maximum(jnp.sum(fc), 1.0)
        u = fs / n1 + jnp.where(fc > 0, jnp.sqrt(2.0 * jnp.log(t) / n1), jnp.inf)
        return jnp.argmax(u).astype(_I)

    def run(key, r):
        s = streams(key, r)

        def feed(c):
            J, fc, fs, qc, qs, k = c
            k, sub = jax.random.split(k)
            v = (M.uniform(sub) * qc[J] < qs[J]).astype(_F)
            e = onehot(J, K)
            fc, fs, qc, qs = fc + e, fs + e * v, qc - e, qs - e * v
            return ucb_arm(fc, fs), fc, fs, qc, qs, k

        def step(c, t):
            J, fc, fs, qc, qs, k, cal, reg = c
            u, d, _, _ = round_draws(s, t, law)
            cal, got = calendar(cal, t, d, jnp.concatenate([onehot(J, K), onehot(J, K) * (u < mu[J])]))
            c2 = lax.while_loop(lambda c: c[3][c[0]] > 0, feed, (J, fc, fs, qc + got[:K], qs + got[K:], k))
            return (*c2, cal, reg + jnp.max(mu) - mu[J]), None

        zk = jnp.zeros((K,), _F)
        c0 = (jnp.zeros((), _I), zk, zk, zk, zk, s.init, jnp.zeros((law.support_max + 1, 2 * K), _F), jnp.zeros((), _F))
        return recorded(step, c0, T, n_rec, lambda c: c[-1])

    return run


# ----------------------------------------------------------------------------- Vernade et al. 2017 (Discarding)
def conv_law():
    return D.geometric(mean=CONV_DELAY_MEAN)


def plain_discarding(index):
    """Discarding-UCB / -KLUCB: indices on closed pulls only (age >= m) and their conversions
    within the window; the ring of the last m pulls (arm, converted within m) in natural order."""

    def make(K, T, n_rec):
        law, m, mu = conv_law(), CONV_WINDOW, jnp.asarray(sto_means(K))

        def run(key, r):
            s = streams(key, r)
            tau_m = -jnp.expm1((m + 1) * law.log_rho)

            def step(c, t):
                nc, sc, ring, conv, reg = c
                u, d, _, ka = round_draws(s, t, law)
                beta = jnp.log(jnp.maximum(t + 1.0, 1.0))
                ok, n_eff = nc > 0, tau_m * nc
                theta = sc / jnp.where(ok, n_eff, 1.0)
                if index == "ucb":
                    idx = jnp.where(ok, theta + jnp.sqrt(beta / (2.0 * jnp.where(ok, n_eff, 1.0))), jnp.inf)
                else:
                    idx = M.poisson_kl_ucb(theta, n_eff, beta, 1.0, 8)
                a = jnp.where(t < K, t % K, M.argmax_random_tie(idx, M.uniform(ka)))
                e_old = onehot(ring[t % m], K)  # the pull of round t - m closes (-1: none)
                nc, sc = nc + e_old, sc + e_old * conv[t % m]
                ring, conv = ring.at[t % m].set(a), conv.at[t % m].set(((u < mu[a]) & (d <= m)).astype(_F))
                return (nc, sc, ring, conv, reg + jnp.max(mu) - mu[a]), None

            zk = jnp.zeros((K,), _F)
            c0 = (zk, zk, jnp.full((m,), -1, _I), jnp.zeros((m,), _F), jnp.zeros((), _F))
            return recorded(step, c0, T, n_rec, lambda c: c[-1])

        return run

    return make


# ----------------------------------------------------------------------------- Vernade et al. 2020 (OTFLinUCB / TS)
LAM, DELTA, SIGMA0 = 1.0, 0.1, 0.5


def plain_otf(kind):
    """OTFLinUCB and OTFLinTS (the authors' code's variants, the library's defaults): V^-1 by
    Sherman-Morrison over every play, B over the conversions seen within the window, the bias the
    running sum of the stored squared norms of the last m plays."""

    def make(K, T, n_rec):
        X, theta = (jnp.asarray(v) for v in lin_world(K))
        law, m, dim = conv_law(), CONV_WINDOW, X.shape[1]
        mu = jnp.clip(X @ theta, 0.0, 1.0)
        reg0 = LAM if kind == "ucb" else SIGMA0**2

        def run(key, r):
            s = streams(key, r)

            def step(c, t):
                vinv, b, ring, bias, cc, cal, reg = c
                u, d, _, ka = round_draws(s, t, law)
                th = vinv @ b
                if kind == "ucb":
                    qa = jnp.maximum(jnp.einsum("kd,de,ke->k", X, vinv, X), 0.0)
                    beta = 2 * math.log(1 / DELTA) + dim * jnp.log1p(t / (LAM * dim))
                    idx = X @ th + (jnp.sqrt(beta + LAM) + bias) * qa
                else:
                    chol = jnp.linalg.cholesky(vinv + 1e-7 * jnp.eye(dim, dtype=_F))
                    idx = X @ (th + jnp.sqrt(cc) * (chol @ M.normals(ka, dim, offset=1)))
                a = M.argmax_random_tie(idx, M.uniform(ka))
                x = X[a]
                cal, got = calendar(cal, t, d, x * ((u < mu[a]) & (d <= m)))
                q = jnp.maximum(x @ vinv @ x, 0.0)
                v = vinv @ x
                vinv = vinv - jnp.outer(v, v) / (1.0 + q)
                vinv = 0.5 * (vinv + vinv.T)
                if kind == "ts":
                    q = jnp.maximum(x @ vinv @ x, 0.0) / jnp.maximum(cc, 1e-12)
                bias = bias - ring[t % m] + q
                return (vinv, b + got, ring.at[t % m].set(q), bias, SIGMA0 + bias, cal, reg + jnp.max(mu) - mu[a]), None

            z = jnp.zeros((), _F)
            c0 = (jnp.eye(dim, dtype=_F) / reg0, jnp.zeros((dim,), _F), jnp.zeros((m,), _F), z, z + SIGMA0,
                  jnp.zeros((m + 1, dim), _F), z)
            return recorded(step, c0, T, n_rec, lambda c: c[-1])

        return run

    return make


# ----------------------------------------------------------------------------- Wang et al. 2021 (composite)
def comp_world(K):
    return E.composite(sto_means(K), profile=np.ones(COMP_L))


def comp_round(F, x):
    """The pull's reward spread over the next L rounds; returns (future masses, y_t)."""
    F = F + x * (1.0 / COMP_L)
    return jnp.concatenate([F[1:], jnp.zeros((1,), _F)]), F[0]


ARS_ALPHA = 4.0


def plain_ars_ucb(K, T, n_rec):
    """ARS-UCB (alpha = 4, f(k) = k^2): the arm of largest clipped UCB (ties: fewest plays, then
    lowest index) played for f(K_a) slots; M_a sums every y received while a is played."""
    mu = jnp.asarray(sto_means(K))

    def decide(n, ms, k, tp):
        n1 = jnp.maximum(n, 1.0)
        u = jnp.where(n > 0, jnp.minimum(ms / n1 + jnp.sqrt(ARS_ALPHA * jnp.log(tp) / n1), 1.0), 1.0)
        a = jnp.argmin(jnp.where(u == jnp.max(u), n, jnp.inf)).astype(_I)
        return a, jnp.maximum(k[a] * k[a], 1), k.at[a].add(1)

    def run(key, r):
        s = streams(key, r)

        def step(c, t):
            a, left, n, ms, k, F, reg = c
            F, y = comp_round(F, (M.uniform(fold(s.rew, t)) < mu[a]).astype(_F))
            e = onehot(a, K)
            n, ms, left = n + e, ms + e * y, left - 1
            a2, l2, k2 = decide(n, ms, k, (t + 1).astype(_F))
            done = left == 0
            return (jnp.where(done, a2, a), jnp.where(done, l2, left), n, ms, jnp.where(done, k2, k), F,
                    reg + jnp.max(mu) - mu[a]), None

        zk = jnp.zeros((K,), _F)
        a, left, k = decide(zk, zk, jnp.ones((K,), _I), jnp.asarray(1.0, _F))
        c0 = (a, left, zk, zk, k, jnp.zeros((COMP_L,), _F), jnp.zeros((), _F))
        return recorded(step, c0, T, n_rec, lambda c: c[-1])

    return run


def plain_ars_exp3(K, T, n_rec):
    """ARS-EXP3 (beta = 1/2): block k of g(k) = ceil(sqrt k) slots, its arm drawn from
    (1 - gamma) softmax(w / g(K)) + gamma / N; at its end w_a += gamma min(Z, g(k)) / (N p_a)."""
    mu = jnp.asarray(sto_means(K))
    tab, nK = W.exp3_block_table(T, 0.5)
    gam, gK = W.ars_exp3_gamma(K, T, 0.5), float(tab[nK - 1]) if nK >= 1 else 1.0
    tab = jnp.asarray(tab, _I)

    def run(key, r):
        s = streams(key, r)

        def step(c, t):
            w, a, pa, k, left, z, F, reg = c
            p = (1.0 - gam) * jax.nn.softmax(w / gK) + gam / K
            an = M.sample_from_probs(p, M.uniform(fold(s.act, t)))
            new = left == 0
            a, pa = jnp.where(new, an, a), jnp.where(new, p[an], pa)
            F, y = comp_round(F, (M.uniform(fold(s.rew, t)) < mu[a]).astype(_F))
            blen = jnp.maximum(tab[jnp.clip(k - 1, 0, nK)], 1)
            left = jnp.where(new, blen, left) - 1
            z = jnp.where(new, 0.0, z) + y
            full = (left == 0) & (k <= nK)
            w = w + full * onehot(a, K) * gam * jnp.minimum(z, blen.astype(_F)) / (K * pa)
            return (w - jnp.max(w), a, pa, k + (left == 0), left, z, F, reg + jnp.max(mu) - mu[a]), None

        z = jnp.zeros((), _F)
        c0 = (jnp.zeros((K,), _F), jnp.zeros((), _I), z + 1.0, jnp.ones((), _I), jnp.zeros((), _I), z,
              jnp.zeros((COMP_L,), _F), z)
        return recorded(step, c0, T, n_rec, lambda c: c[-1])

    return run


def plain_clw(K, T, n_rec):
    """CLW with known d = L (Wang et al.'s form): q = 1/(2d), gamma = min(1, sqrt(2 d N log N / (T + d)));
    a new arm is drawn after each update round (forward coin rule: a coin success followed by no
    success for 2d - 1 slots); the update credits the window sum of the last d observations / 2d."""
    mu, dk = jnp.asarray(sto_means(K)), COMP_L
    q, rate = np.float32(1.0 / (2 * dk)), np.float32(min(1.0, math.sqrt(2 * dk * K * math.log(K) / (T + dk))))
    geom = lambda u: (1 + jnp.floor(jnp.log(u) / jnp.log1p(-q))).astype(_I)

    def run(key, r):
        s = streams(key, r)
        kc = s.init  # the coins' key

        def step(c, t):
            logw, a, pa, draw, n1, n2, zb, F, reg = c
            p = (1.0 - rate) * jax.nn.softmax(logw) + rate / K
            an = M.sample_from_probs(p, M.uniform(fold(s.act, t)))
            a, pa = jnp.where(draw, an, a), jnp.where(draw, p[an], pa)
            F, y = comp_round(F, (M.uniform(fold(s.rew, t)) < mu[a]).astype(_F))
            zb = zb.at[t % dk].set(y)
            hit = t == n1
            in_u = hit & (n2 - n1 >= 2 * dk)
            gap = geom(M.uniform(fold(kc, 2 * t + 1)))
            n1, n2 = jnp.where(hit, n2, n1), jnp.where(hit, n2 + gap, n2)
            logw = logw + onehot(a, K) * in_u * rate * (jnp.sum(zb) / (2.0 * dk)) / (K * pa)
            return (logw - jnp.max(logw), a, pa, in_u, n1, n2, zb, F, reg + jnp.max(mu) - mu[a]), None

        n1 = geom(M.uniform(fold(kc, 0))) - 1
        n2 = n1 + geom(M.uniform(fold(kc, 1)))
        z = jnp.zeros((), _F)
        c0 = (jnp.zeros((K,), _F), jnp.zeros((), _I), z + 1.0, jnp.asarray(True), n1, n2, jnp.zeros((dk,), _F),
              jnp.zeros((COMP_L,), _F), z)
        return recorded(step, c0, T, n_rec, lambda c: c[-1])

    return run


# ----------------------------------------------------------------------------- the registry
def _odaaf_setup(name):
    def setup(K, T):
        law, mean, bound, var = odaaf_params()
        pol = {"ODAAF": lambda: AN.odaaf(mean), "ODAAF-B": lambda: AN.odaaf_b(mean, bound),
               "ODAAF-V": lambda: AN.odaaf_v(mean, var), "ODAAF-naive": lambda: AN.odaaf_naive(bound)}[name]()
        return E.bernoulli(odaaf_means(K), delay=law), C.anonymous(), pol

    return setup


def _conv_setup(pol):
    return lambda K, T: (E.conversions(sto_means(K), conv_law()), C.conversions(window=CONV_WINDOW), pol())


def _lin_setup(pol):
    def setup(K, T):
        X, theta = lin_world(K)
        return E.linear(theta, features=X, delay=conv_law()), C.conversions(window=CONV_WINDOW), pol()

    return setup


ADV_W = "Bern(K, 0.1) losses, delays uniform{0..10}"
ODAAF_W = "Bernoulli 0.9 / 0.45..0.3, delays uniform{0..6}"
CONV_W = f"conversions linspace(0.1, 0.9), geometric delays of mean {CONV_DELAY_MEAN:g}, window {CONV_WINDOW}"
LIN_W = (f"linear d=5, fixed binary actions (normalised), geometric delays mean {CONV_DELAY_MEAN:g}, "
         f"window {CONV_WINDOW}")
COMP_W = f"Bernoulli linspace(0.1, 0.9), reward spread evenly over {COMP_L} rounds"

ALGOS: dict = {
    "Exp3": Algo(lambda K, T: (adv_world(K), C.attributed(), CL.exp3()), plain_exp_weights("exp3"),
                 ADV_W + ", attributed"),
    "DEW": Algo(lambda K, T: (adv_world(K), C.attributed(), A.dew(dew_eta(K, T))), plain_exp_weights("dew"),
                ADV_W + ", attributed"),
    "Skipper": Algo(lambda K, T: (adv_world(K), C.attributed(), A.skipper_dew(SKIP_BETA)),
                    plain_exp_weights("skipper"), ADV_W + f", attributed, beta = {SKIP_BETA:g}"),
    "Doubling": Algo(lambda K, T: (adv_world(K), C.action_time(), A.doubling()), plain_doubling,
                     ADV_W + ", delays revealed at action time"),
    **{n: Algo(_odaaf_setup(n), plain_odaaf(n), ODAAF_W + ", anonymous", (3, 2000)) for n in ODAAF_KINDS},
    "QPM-D": Algo(lambda K, T: (E.bernoulli(sto_means(K), delay=odaaf_params()[0]), C.attributed(), AN.qpmd("ucb1")),
                  plain_qpmd, "Bernoulli linspace(0.1, 0.9), delays uniform{0..6}, attributed"),
    "Discarding-UCB": Algo(_conv_setup(lambda: CV.discarding_ucb(conv_law(), CONV_WINDOW)), plain_discarding("ucb"),
                           CONV_W),
    "Discarding-KLUCB": Algo(_conv_setup(lambda: CV.discarding_klucb(conv_law(), CONV_WINDOW)),
                             plain_discarding("kl"), CONV_W),
    "OTFLinUCB": Algo(_lin_setup(lambda: LI.otf_linucb(CONV_WINDOW)), plain_otf("ucb"), LIN_W),
    "OTFLinTS": Algo(_lin_setup(lambda: LI.otf_lints(CONV_WINDOW)), plain_otf("ts"), LIN_W),
    "ARS-UCB": Algo(lambda K, T: (comp_world(K), C.composite(), W.ars_ucb(ARS_ALPHA, "k^2")), plain_ars_ucb, COMP_W,
                    (5, 1500)),
    "ARS-EXP3": Algo(lambda K, T: (comp_world(K), C.composite(), W.ars_exp3(0.5)), plain_ars_exp3, COMP_W),
    "CLW": Algo(lambda K, T: (comp_world(K), C.composite(), W.clw(COMP_L)), plain_clw, COMP_W + f", d = {COMP_L}"),
}

SKIPPED = {"delay-model TS": "its refresh is a Newton step and an HMC transition on the potential of the library's "
                             "NumPyro conversion model: a plain scan would re-derive that likelihood, its derivatives "
                             "and the transition by hand (hundreds of lines), not a plain scan of the algorithm"}


# ----------------------------------------------------------------------------- measuring
def plain_program(run_one):
    """``jit(vmap(run_one))`` over run ids (one key for all runs)."""
    return jax.jit(jax.vmap(run_one, in_axes=(None, 0)))


def run_plain(name, n_runs, T, K=10, seed=0, n_rec=200, repeat=1, fold_in="jax"):
    """Compile (timed: lower + compile), warm up, then time the plain scan ``repeat`` times (the
    regret records to the host); ``fold_in``: a key of :data:`FOLDS`. Returns ``(regret [runs, R],
    compile_s, run_s)``."""
    key, ids = jax.random.key(seed), jnp.arange(n_runs, dtype=_I)
    t0 = time.perf_counter()
    _FOLD[0] = fold_in  # read while tracing, inside lower()
    try:
        exe = plain_program(ALGOS[name].plain(K, T, n_rec)).lower(key, ids).compile()
    finally:
        _FOLD[0] = "jax"
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(exe(key, ids))
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        reg = np.asarray(jax.block_until_ready(exe(key, ids)))
        best = min(best, time.perf_counter() - t0)
    return reg, compile_s, best


def run_library(name, n_runs, T, K=10, seed=0, n_rec=200, repeat=1):
    """``simulate(..., path="scan")`` (default results, L(t) not tracked: the plain scans do not
    track it) twice or more with the same components; the later calls are timed (wall clock minus
    any compile the engine reports for them). Returns ``(output, compile_s, run_s,
    engine_compile_s)``: ``compile_s`` is the first call's wall clock minus the run's, the
    engine's own figure is what it reports for its first call."""
    env, ch, pol = ALGOS[name].setup(K, T)
    kw = dict(record=stride(T, n_rec), path="scan", delayed_regret=False)
    t0 = time.perf_counter()
    out = jb.simulate(env, ch, pol, T, jax.random.key(seed), n_runs, **kw)
    first = time.perf_counter() - t0
    engine_compile = out.timing.get("compile_s")
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jb.simulate(env, ch, pol, T, jax.random.key(seed), n_runs, **kw)
        best = min(best, time.perf_counter() - t0 - (out.timing.get("compile_s") or 0.0))
    return out, first - best, best, engine_compile


def z_score(a, b):
    """``(mean a - mean b) / sqrt(var a / n_a + var b / n_b)``. The standard error is floored at
    1e-3 of the regret's scale: a deterministic algorithm (ODAAF's phases at a short horizon) gives
    equal regrets in every run, which the library's Kahan sums and a plain float32 sum of T terms
    round apart (5e-5 relative measured at T = 4000; at most about T 2^-24)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    scale = max(1.0, abs(a.mean()), abs(b.mean()))
    return float((a.mean() - b.mean()) / max(se, 1e-3 * scale))


def measure(name, n_runs, T, K=10, seed=0, n_rec=200, repeat=1, fold_in="jax") -> dict:
    """The library beside the plain scan of ``name``: compile and run seconds, run-steps/s and
    their ratio (library / plain), both mean final regrets with standard errors, the z score of
    their difference, and the share of runs whose final regrets are equal."""
    out, lc, lr, lec = run_library(name, n_runs, T, K, seed, n_rec, repeat)
    reg, pc, pr = run_plain(name, n_runs, T, K, seed, n_rec, repeat, fold_in)
    lib_f, pl_f = np.asarray(out.final("regret"), np.float64), reg[:, -1].astype(np.float64)
    if reg.shape[1] != len(out.t):
        raise AssertionError(f"{name}: the plain scan recorded {reg.shape[1]} points, the library {len(out.t)}")
    se = lambda x: float(x.std(ddof=1) / math.sqrt(x.size))
    steps = n_runs * T
    return {"algo": name, "world": ALGOS[name].world, "runs": n_runs, "horizon": T, "K": K, "records": len(out.t),
            "lib_compile_s": lc, "lib_engine_compile_s": lec, "lib_run_s": lr,
            "lib_run_steps_per_s": steps / lr, "plain_compile_s": pc, "plain_run_s": pr,
            "plain_run_steps_per_s": steps / pr, "ratio_lib_over_plain": pr / lr,
            "lib_final_regret": float(lib_f.mean()), "lib_final_regret_se": se(lib_f),
            "plain_final_regret": float(pl_f.mean()), "plain_final_regret_se": se(pl_f),
            "z": z_score(lib_f, pl_f),
            "same_final_share": float(np.mean(np.isclose(lib_f, pl_f, rtol=1e-4, atol=1e-3))),
            "plain_fold_in": fold_in, "device": str(jax.devices()[0].device_kind), "platform": jax.default_backend()}


def table(rows) -> str:
    head = (f"{'algorithm':<17} {'lib compile s':>13} {'lib steps/s':>12} {'plain compile s':>15} "
            f"{'plain steps/s':>13} {'lib/plain':>9} {'z':>6} {'same':>5}")
    lines = [head, "-" * len(head)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['algo']:<17} ERROR: {r['error']}")
            continue
        lines.append(f"{r['algo']:<17} {r['lib_compile_s']:>13.2f} {r['lib_run_steps_per_s']:>12.3g} "
                     f"{r['plain_compile_s']:>15.2f} {r['plain_run_steps_per_s']:>13.3g} "
                     f"{r['ratio_lib_over_plain']:>9.2f} {r['z']:>6.2f} {r['same_final_share']:>5.2f}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="The library beside a plain vmap(lax.scan) of every algorithm of the papers.")
    ap.add_argument("--algos", nargs="+", default=list(ALGOS), choices=list(ALGOS), metavar="ALGO",
                    help="which rows (default: all): " + ", ".join(ALGOS))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--horizon", type=int, default=1000)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1, help="timed calls of each (the fastest is kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fold-in", choices=list(FOLDS), default="jax",
                    help="the plain scans' per-round fold_in: jax.random's (default) or the engine's written-out "
                         "mathlib.fold_in (same bits)")
    ap.add_argument("--out", default=None, help="JSON file (default: benchmarks/results/plain_scans-<platform>.json)")
    a = ap.parse_args(argv)
    for flag, v, lo in (("--runs", a.runs, 2), ("--horizon", a.horizon, 2), ("--arms", a.arms, 3),
                        ("--records", a.records, 1), ("--repeat", a.repeat, 1)):
        if v < lo:
            ap.error(f"{flag} must be >= {lo}, got {v}")
    if a.arms > 10:
        ap.error(f"--arms must be <= 10 (the worlds' sizes), got {a.arms}")
    out = a.out or f"benchmarks/results/plain_scans-{jax.default_backend()}.json"
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)

    def save():  # after every row: a run cut short keeps the rows it finished
        with open(out, "w") as fh:
            json.dump({"args": vars(a), "rows": rows, "skipped": SKIPPED}, fh, indent=1)

    rows = []
    for name in a.algos:
        t0 = time.perf_counter()
        try:
            row = measure(name, a.runs, a.horizon, a.arms, a.seed, a.records, a.repeat, a.fold_in)
        except Exception as e:  # one failing row must not stop the others
            traceback.print_exc()
            row = {"algo": name, "error": f"{type(e).__name__}: {e}"}
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        save()
        print(table([row]).splitlines()[-1], f"({row['wall_s']:.0f} s)", flush=True)
    print()
    print(f"{a.runs} runs x {a.horizon} rounds, K = {a.arms}, on {jax.default_backend()} "
          f"({jax.devices()[0].device_kind}), plain fold_in: {a.fold_in}; lib/plain > 1: the library is faster")
    print(table(rows))
    for k, why in SKIPPED.items():
        print(f"skipped {k}: {why}")
    print(f"wrote {out}")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
