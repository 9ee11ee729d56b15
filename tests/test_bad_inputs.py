"""A catalogue of bad inputs (issue 16): every one raises a ValueError or TypeError that names the
parameter (or the file's row and column), before anything is compiled; inputs whose cost would
explode are refused (or handled) in bounded time; property tests over delay-law and world
parameters, extremes included; seeds over 0 .. 2**64 - 1 map to keys without aliasing.

"Before anything is compiled" is checked by counting XLA compilations (the event
``/jax/core/compile/backend_compile_duration``) during the failing call, with JAX's caches cleared
first, so a jnp operation run before the check would compile and be caught whatever ran earlier.
"""
import math
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxbandits.core import validate as V
from jaxbandits import channels as C
from jaxbandits import delays as D
from jaxbandits import envs as E
from jaxbandits import experiments as X
from jaxbandits.core import profiles as Pr
from jaxbandits.delaymodels import logs as L
from jaxbandits.policies import adversarial as PA
from jaxbandits.policies import anonymous as PN
from jaxbandits.policies import classic as P
from jaxbandits.policies import composite as PW
from jaxbandits.policies import conversions as PC
from jaxbandits.policies import linear as PL
from jaxbandits.engine import simulate, simulate_grid

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_COMPILES = []  # fun_name of every XLA compilation


def _listener(event, duration, **kw):
    if event == COMPILE_EVENT:
        _COMPILES.append(kw.get("fun_name", "?"))


def _eager_names():
    import jax.extend.core as jc
    import jax.extend.core.primitives as prims

    names = {getattr(prims, a).name for a in dir(prims) if isinstance(getattr(prims, a), jc.Primitive)}
    return {f"jit({n})" for n in names | {"stage"}}


#: Compilations of one eager operation (``jit(convert_element_type)``, ``jit(stage)``...): JAX
#: compiles one to build any array, so a call that builds valid components before it meets the bad
#: one makes some. They are no program: ``eager=True`` cases allow them and nothing else.
EAGER = _eager_names()


jax.monitoring.register_event_duration_secs_listener(_listener)

NEVER = D.NEVER
BIG = 1e39  # beyond float32
ENV = E.bernoulli([0.2, 0.4])
KEY = jax.random.key(0)


def expect_error(fn, exc, pattern, eager=False):
    """``fn()`` raises ``exc`` whose message matches ``pattern`` and compiles nothing (``eager``:
    nothing but single eager operations, see :data:`EAGER`)."""
    jax.clear_caches()
    n0 = len(_COMPILES)
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert re.search(pattern, msg), f"the message does not name {pattern!r}: {msg}"
    new = _COMPILES[n0:]
    if eager:
        new = [f for f in new if f not in EAGER]
    assert not new, f"compiled {new} before the error: {msg}"
    return msg


def test_compile_counter_sees_compilations():
    """The counter the catalogue relies on does count: a jnp operation after clear_caches compiles
    (caught by the strict check), a program (a simulation) compiles something the eager check
    catches too; so the catalogue's "nothing compiled" can fail."""
    jax.clear_caches()
    n0 = len(_COMPILES)
    jnp.asarray([1.0, 2.0], jnp.float32) + 1
    assert len(_COMPILES) > n0 and set(_COMPILES[n0:]) <= EAGER
    n1 = len(_COMPILES)
    simulate(ENV, C.attributed(), P.ucb1(), 5, KEY)
    assert set(_COMPILES[n1:]) - EAGER, _COMPILES[n1:]


# ----------------------------------------------------------------------------- the catalogue
VE, TE, BOTH = ValueError, TypeError, (ValueError, TypeError)
CASES = []


def case(id_, fn, exc, pattern, eager=False, marks=()):
    CASES.append(pytest.param(fn, exc, pattern, eager, id=id_, marks=marks))


FIX1, GEO = D.fixed(1), D.geometric(0.5)
DEW = PA.dew(0.1)
OBLIVIOUS = E.oblivious(np.zeros((10, 2)))


# delay laws
case("fixed-neg", lambda: D.fixed(-1), VE, "d")
case("fixed-over-never", lambda: D.fixed(NEVER + 1), VE, r"\bd\b.*<= 1073741824")
case("fixed-frac", lambda: D.fixed(1.5), TE, r"\bd\b")
case("fixed-str", lambda: D.fixed("3"), TE, r"\bd\b")
case("uniform-int32-overflow", lambda: D.uniform(0, 2**31 - 1), VE, r"\bhi\b.*1073741824")
case("uniform-over-never", lambda: D.uniform(0, NEVER + 1), VE, r"\bhi\b")
case("uniform-neg-lo", lambda: D.uniform(-1, 3), VE, r"\blo\b")
case("uniform-hi-below-lo", lambda: D.uniform(5, 3), VE, r"\bhi\b")
case("uniform-huge-lo", lambda: D.uniform(2**31, 2**31), VE, r"\blo\b")
case("uniform-frac", lambda: D.uniform(0.5, 3), TE, r"\blo\b")
case("geometric-none", lambda: D.geometric(), VE, "rho")
case("geometric-one", lambda: D.geometric(1.0), VE, "rho")
case("geometric-neg", lambda: D.geometric(-0.1), VE, "rho")
case("geometric-nan", lambda: D.geometric(float("nan")), VE, "rho")
case("geometric-both", lambda: D.geometric(0.5, mean=2.0), VE, "rho")
case("geometric-mean-neg", lambda: D.geometric(mean=-1.0), VE, "mean")
case("geometric-mean-f32", lambda: D.geometric(mean=BIG), VE, "mean")
case("geometric-mean-over-never", lambda: D.geometric(mean=2.0**31), VE, "mean")
case("poisson-zero", lambda: D.poisson(0.0), VE, "lam")
case("poisson-neg", lambda: D.poisson(-1.0), VE, "lam")
case("poisson-1e7", lambda: D.poisson(1e7), VE, r"lam.*1000")
case("poisson-over-cap", lambda: D.poisson(1000.5), VE, "lam")
case("poisson-inf", lambda: D.poisson(float("inf")), VE, "lam")
case("poisson-str", lambda: D.poisson("4"), TE, "lam")
case("exponential-zero", lambda: D.exponential(0.0), VE, "scale")
case("exponential-f32", lambda: D.exponential(BIG), VE, "scale")
case("exponential-over-never", lambda: D.exponential(2.0**31), VE, "scale")
case("exponential-subnormal", lambda: D.exponential(1e-40), VE, "scale")
case("exponential-nan", lambda: D.exponential(float("nan")), VE, "scale")
case("half-normal-zero", lambda: D.half_normal(0.0), VE, "sigma")
case("half-normal-inf", lambda: D.half_normal(float("inf")), VE, "sigma")
case("half-normal-f32", lambda: D.half_normal(BIG), VE, "sigma")
case("weibull-shape-tiny", lambda: D.weibull(0.001, 10.0), VE, "shape")
case("weibull-shape-nan", lambda: D.weibull(float("nan"), 10.0), VE, "shape")
case("weibull-scale-zero", lambda: D.weibull(1.0, 0.0), VE, "scale")
case("weibull-scale-f32", lambda: D.weibull(1.0, BIG), VE, "scale")
case("log-normal-mu-range", lambda: D.log_normal(101.0, 1.0), VE, r"\bmu\b")
case("log-normal-mu-f32", lambda: D.log_normal(BIG, 1.0), VE, r"\bmu\b")
case("log-normal-mu-neg-inf", lambda: D.log_normal(float("-inf"), 1.0), VE, r"\bmu\b")
case("log-normal-sigma-range", lambda: D.log_normal(0.0, 16.0), VE, "sigma")
case("log-normal-sigma-zero", lambda: D.log_normal(0.0, 0.0), VE, "sigma")
case("pareto-alpha-zero", lambda: D.pareto(0.0), VE, "alpha")
case("pareto-alpha-f32", lambda: D.pareto(BIG), VE, "alpha")
case("pareto-scale-neg", lambda: D.pareto(1.5, -1.0), VE, "scale")
case("pareto-scale-over-never", lambda: D.pareto(1.5, 2.0**31), VE, "scale")
case("histogram-empty", lambda: D.histogram([]), VE, "pmf")
case("histogram-no-mass", lambda: D.histogram([0.0, 0.0]), VE, "pmf")
case("histogram-neg", lambda: D.histogram([-1.0, 2.0]), VE, "pmf")
case("histogram-nan", lambda: D.histogram([float("nan"), 1.0]), VE, "pmf")
case("histogram-2d", lambda: D.histogram([[1.0]]), VE, "pmf")
case("histogram-f32", lambda: D.histogram([BIG, 1.0]), VE, "pmf")
case("histogram-too-long", lambda: D.histogram(np.broadcast_to(np.float32(1), (D.MAX_HISTOGRAM + 1,))), VE, "pmf")
case("from-samples-empty", lambda: D.from_samples([]), VE, "samples")
case("from-samples-neg", lambda: D.from_samples([-1, 2]), VE, "samples")
case("from-samples-frac", lambda: D.from_samples([1.5]), VE, "samples")
case("from-samples-1e9", lambda: D.from_samples([0, 10**9]), VE, r"samples.*max_delay")
case("from-samples-max-delay", lambda: D.from_samples([1, 2], max_delay=2**24), VE, "max_delay")
case("from-samples-2d", lambda: D.from_samples([[1]]), VE, "samples")
case("sequence-empty", lambda: D.sequence([]), VE, "delays")
case("sequence-neg", lambda: D.sequence([1, -1]), VE, "delays")
case("sequence-frac", lambda: D.sequence([1.5]), VE, "delays")
case("sequence-nan", lambda: D.sequence([float("nan")]), VE, "delays")
case("shift-neg", lambda: D.shift(FIX1, -1), VE, r"\bk\b")
case("shift-int32-overflow", lambda: D.shift(FIX1, NEVER), VE, r"\bk\b")
case("shift-not-law", lambda: D.shift("geometric", 1), TE, "law")
case("two-point-p", lambda: D.two_point(1.5, 3), VE, r"\bp\b")
case("two-point-d-neg", lambda: D.two_point(0.5, -1), VE, r"\bd\b")
case("two-point-d-over-never", lambda: D.two_point(0.5, NEVER + 1), VE, r"\bd\b")
case("mixture-p0", lambda: D.log_normal_mixture(1.5, [1.0], [0.0], [1.0]), VE, "p0")
case("mixture-weights", lambda: D.log_normal_mixture(0.1, [-1.0], [0.0], [1.0]), VE, "weights")
case("mixture-mus", lambda: D.log_normal_mixture(0.1, [1.0], [101.0], [1.0]), VE, "mus")
case("mixture-sigmas", lambda: D.log_normal_mixture(0.1, [1.0], [0.0], [0.0]), VE, "sigmas")
case("mixture-lengths", lambda: D.log_normal_mixture(0.1, [1.0, 1.0], [0.0], [1.0]), VE, "weights, mus and sigmas")

# worlds
case("bernoulli-range", lambda: E.bernoulli([0.2, 1.2]), VE, "means")
case("bernoulli-nan", lambda: E.bernoulli([0.2, float("nan")]), VE, "means")
case("bernoulli-one-arm", lambda: E.bernoulli([0.5]), VE, "means")
case("bernoulli-2d", lambda: E.bernoulli([[0.1, 0.2]]), VE, "means")
case("bernoulli-str", lambda: E.bernoulli("ab"), TE, "means")
case("bernoulli-delay-int", lambda: E.bernoulli([0.1, 0.2], delay=3), TE, "delay")
case("bernoulli-too-many-arms", lambda: E.bernoulli(np.full(V.MAX_ARMS + 1, 0.5)), VE, "means")
case("gaussian-mean-f32", lambda: E.gaussian([BIG, 0.0]), VE, "means")
case("gaussian-mean-1e31", lambda: E.gaussian([1e31, 0.0]), VE, "means")
case("gaussian-sigma-zero", lambda: E.gaussian([0.0, 1.0], sigma=0.0), VE, "sigma")
case("gaussian-sigma-1e31", lambda: E.gaussian([0.0, 1.0], sigma=1e31), VE, "sigma")
case("gaussian-sigma-inf", lambda: E.gaussian([0.0, 1.0], sigma=float("inf")), VE, "sigma")
case("conversions-no-delay", lambda: E.conversions([0.1, 0.2], None), VE, "delay")
case("conversions-theta", lambda: E.conversions([0.1, 2.0], FIX1), VE, "theta")
case("arm-delays-count", lambda: E.conversions_arm_delays([0.1, 0.2], [FIX1]), VE, "delays")
case("arm-delays-theta", lambda: E.conversions_arm_delays([0.1, -0.2], [FIX1] * 2), VE, "theta")
case("linear-features-shape", lambda: E.linear([0.1, 0.2], features=np.ones((3, 3))), VE, "features")
case("linear-no-actions", lambda: E.linear([0.1, 0.2]), VE, "n_actions")
case("linear-action-set", lambda: E.linear([0.1, 0.2], n_actions=4, action_set="cube"), VE, "action_set")
case("linear-theta-f32", lambda: E.linear([BIG, 0.0], n_actions=4), VE, "theta")
case("linear-theta-means", lambda: E.linear([1e30, 1e30], n_actions=3), VE, "theta")
case("linear-theta-2d", lambda: E.linear([[0.1, 0.2]], n_actions=3), VE, "theta")
case("linear-one-action", lambda: E.linear([0.1, 0.2], n_actions=1), VE, "n_actions")
case("linear-many-actions", lambda: E.linear([0.1, 0.2], n_actions=V.MAX_ARMS + 1), VE, "n_actions")
case("linear-sigma", lambda: E.linear([0.1, 0.2], n_actions=3, sigma=0.0), VE, "sigma")
case("linear-noise", lambda: E.linear([0.1, 0.2], n_actions=3, noise="poisson"), VE, "noise")
case("linear-feature-means", lambda: E.linear([1e20, 0.0], features=[[1e20, 0.0], [0.0, 1.0]]), VE, "features")
case("linear-n-valid", lambda: E.linear([0.1, 0.2], n_actions=4, n_valid=5), VE, "n_valid")
case("linear-min-valid", lambda: E.linear([0.1, 0.2], n_actions=4, n_valid=3, min_valid=4), VE, "min_valid")
case("oblivious-range", lambda: E.oblivious(np.full((5, 2), 1.5)), VE, "losses")
case("oblivious-one-arm", lambda: E.oblivious(np.zeros((5, 1))), VE, "losses")
case("oblivious-delays-length", lambda: E.oblivious(np.zeros((5, 2)), delays=[1, 2]), VE, "delays")
case("oblivious-delays-neg", lambda: E.oblivious(np.zeros((3, 2)), delays=[1, -2, 0]), VE, "delays")
case("switching-period-zero", lambda: E.switching([[0.1, 0.2]], period=0), VE, "period")
case("switching-period-int32", lambda: E.switching([[0.1, 0.2]], period=2**31), VE, "period")
case("switching-one-arm", lambda: E.switching([[0.1]], period=1), VE, "loss_means")
case("bern-losses-arms", lambda: E.bernoulli_losses(1, 0.1), VE, "n_arms")
case("bern-losses-gap", lambda: E.bernoulli_losses(2, 0.6), VE, "gap")
case("bern-losses-horizon", lambda: E.bernoulli_losses(2, 0.1, horizon=2**25), VE, "horizon")
case("label-stream-both", lambda: E.label_stream([0, 1, 2], delay=FIX1, adaptive_d=2), VE, "adaptive_d")
case("label-stream-neg", lambda: E.label_stream([0, -1], delay=FIX1), VE, "labels")
case("label-stream-float", lambda: E.label_stream([0.5, 1.0], delay=FIX1), VE, "labels")
case("label-stream-arm-1e6", lambda: E.label_stream([0, 2**21], delay=FIX1), VE, "labels")
case("label-stream-d-int32", lambda: E.label_stream([0, 1], adaptive_d=2**31), VE, "adaptive_d")
case("label-stream-product", lambda: E.label_stream([0, 1], adaptive_d=2**20, streak_factor=2**12), VE, "streak_factor")
case("synthetic-labels-nan", lambda: E.synthetic_labels([0.5, float("nan")], 10), VE, "probs")
case("synthetic-labels-horizon", lambda: E.synthetic_labels([0.5, 0.5], 2**25), VE, "horizon")
case("synthetic-labels-seed-neg", lambda: E.synthetic_labels([0.5, 0.5], 10, seed=-1), VE, "seed")
case("synthetic-labels-seed-2**64", lambda: E.synthetic_labels([0.5, 0.5], 10, seed=2**64), VE, "seed")
case("zipf-n", lambda: E.zipf_probs(1), VE, r"\bn\b")
case("zipf-n-huge", lambda: E.zipf_probs(2**21), VE, r"\bn\b")
case("composite-no-profile", lambda: E.composite([0.1, 0.2]), VE, "profile")
case("composite-profile-neg", lambda: E.composite([0.1, 0.2], profile=[-1.0, 2.0]), VE, "profile")
case("composite-both", lambda: E.composite([0.1, 0.2], table=np.zeros((3, 2)), profile=[1.0]), VE, "table")
case("composite-total", lambda: E.composite([0.1, 0.2], profile=[1.0], total="gamma"), VE, "total")
case("composite-concentration", lambda: E.composite([0.1, 0.2], profile=[1.0], concentration=0.0), VE, "concentration")
case("composite-table-range", lambda: E.composite(table=np.full((3, 2), 2.0), profile=[1.0]), VE, "table")

case("profile-interval-long", lambda: Pr.interval(0, 2**20), VE, "d_max")
case("profile-interval-empty", lambda: Pr.interval(5, 5), VE, "d_max")
case("profile-lin-dec-int32", lambda: Pr.linear_decreasing(2**31), VE, r"\bd\b")
case("profile-lin-inc-long", lambda: Pr.linear_increasing(2**14), VE, r"\bd\b")
case("profile-discounted-gamma", lambda: Pr.discounted(1.0), VE, "gamma")
case("profile-discounted-tol", lambda: Pr.discounted(0.999999, tol=1e-30), VE, "tol")
case("profile-polynomial-max-len", lambda: Pr.polynomial(2.0, max_len=2**15), VE, "max_len")

# channels
case("channel-window-neg", lambda: C.conversions(window=-1), VE, "window")
case("channel-window-int32", lambda: C.conversions(window=2**31), VE, "window")
case("channel-width-zero", lambda: C.attributed(width=0), VE, "width")
case("channel-width-frac", lambda: C.anonymous(width=2.5), TE, "width")
case("channel-width-int32", lambda: C.action_time(width=2**31), VE, "width")
case("channel-width-str", lambda: C.composite(width="4"), TE, "width")

# policies
case("ucb1-alpha-zero", lambda: P.ucb1(0.0), VE, "alpha")
case("ucb1-alpha-f32", lambda: P.ucb1(BIG), VE, "alpha")
case("ucb1-alpha-nan", lambda: P.ucb1(float("nan")), VE, "alpha")
case("ucb1-alpha-str", lambda: P.ucb1("2"), TE, "alpha")
case("klucb-c", lambda: P.kl_ucb(c=-1.0), VE, r"\bc\b")
case("klucb-c-f32", lambda: P.kl_ucb(c=BIG), VE, r"\bc\b")
case("klucb-iters", lambda: P.kl_ucb(iters=0), VE, "iters")
case("klucb-iters-hi", lambda: P.kl_ucb(iters=65), VE, "iters")
case("thompson-prior-mt", lambda: P.thompson(prior_a=0.5), VE, "prior_a")
case("thompson-sampler", lambda: P.thompson(sampler="numpy"), VE, "sampler")
case("thompson-prior-f32", lambda: P.thompson(prior_b=BIG), VE, "prior_b")
case("thompson-prior-jax-zero", lambda: P.thompson(prior_a=0.0, sampler="jax"), VE, "prior_a")
case("gauss-ts-sigma-f32", lambda: P.gaussian_thompson(sigma=BIG), VE, "sigma")
case("gauss-ts-sigma-square", lambda: P.gaussian_thompson(sigma=1e16), VE, "sigma")
case("gauss-ts-prior-var-zero", lambda: P.gaussian_thompson(prior_var=0.0), VE, "prior_var")
case("gauss-ts-prior-var-big", lambda: P.gaussian_thompson(prior_var=1e31), VE, "prior_var")
case("gauss-ts-prior-mean", lambda: P.gaussian_thompson(prior_mean=BIG), VE, "prior_mean")
case("exp3-eta-zero", lambda: P.exp3(eta=0.0), VE, "eta")
case("exp3-eta-f32", lambda: P.exp3(eta=BIG), VE, "eta")
case("exp3-gamma", lambda: P.exp3(gamma=1.5), VE, "gamma")
case("linucb-lam", lambda: P.linucb(lam=0.0), VE, "lam")
case("linucb-delta", lambda: P.linucb(delta=1.0), VE, "delta")
case("lints-v", lambda: P.lints(v=-1.0), VE, r"\bv\b")
case("dew-eta", lambda: PA.dew(0.0), VE, "eta")
case("dew-eta-f32", lambda: PA.dew(BIG), VE, "eta")
case("dew-d-max", lambda: PA.dew(0.1, d_max=-1.0), VE, "d_max")
case("skipper-beta-nan", lambda: PA.skipper(float("nan"), DEW), VE, "beta")
case("skipper-beta-f32", lambda: PA.skipper(BIG, DEW), VE, "beta")
case("skipper-base", lambda: PA.skipper(3.0, "dew"), TE, "base")
case("skipper-dew-beta", lambda: PA.skipper_dew(0.0), VE, "beta")
case("doubling-m0", lambda: PA.doubling(m0=41), VE, "m0")
case("doubling-lanes", lambda: PA.doubling(lanes=1), VE, "lanes")
case("odaaf-mean-delay", lambda: PN.odaaf(-1.0), VE, "mean_delay")
case("odaaf-b-bound", lambda: PN.odaaf_b(1.0, bound=-1.0), VE, "bound")
case("odaaf-v-variance", lambda: PN.odaaf_v(1.0, variance=float("nan")), VE, "variance")
case("odaaf-bridge-rule", lambda: PN.odaaf(1.0, bridge_rule="worst"), VE, "bridge_rule")
case("qpmd-base", lambda: PN.qpmd(base="exp3"), VE, "base")
case("schedule-horizon", lambda: PN.schedule("odaaf", 2**25), VE, "horizon")
case("delayed-ucb-window", lambda: PC.delayed_ucb(GEO, window=-1), VE, "window")
case("delayed-ucb-window-huge", lambda: PC.delayed_ucb(GEO, window=2**25), VE, "window")
case("delayed-ucb-eps", lambda: PC.delayed_ucb(GEO, eps=-1.0), VE, "eps")
case("delayed-ucb-delay", lambda: PC.delayed_ucb("geometric"), TE, "delay")
case("delayed-klucb-iters", lambda: PC.delayed_klucb(GEO, iters=0), VE, "iters")
case("delayed-klucb-cap", lambda: PC.delayed_klucb(GEO, cap=0.0), VE, "cap")
case("discarding-window", lambda: PC.discarding_ucb(GEO, window=2**25), VE, "window")
case("discarding-bonus", lambda: PC.discarding_ucb(GEO, window=10, bonus="x"), VE, "bonus")
case("otf-linucb-window", lambda: PL.otf_linucb(-1), VE, "window")
case("otf-linucb-lam", lambda: PL.otf_linucb(10, lam=0.0), VE, "lam")
case("otf-lints-sigma0", lambda: PL.otf_lints(10, sigma0=0.0), VE, "sigma0")
case("linucb-wait-window", lambda: PL.linucb_wait(0), VE, "window")
case("linucb-ignore-delta", lambda: PL.linucb_ignore_delays(delta=0.0), VE, "delta")
case("ars-ucb-alpha", lambda: PW.ars_ucb(alpha=0.0), VE, "alpha")
case("ars-ucb-f", lambda: PW.ars_ucb(f="k^9"), VE, r"\bf\b")
case("ars-exp3-beta", lambda: PW.ars_exp3(beta=0.0), VE, "beta")
case("clw-d", lambda: PW.clw(0), VE, r"\bd\b")
case("clw-d-huge", lambda: PW.clw(2**25), VE, r"\bd\b")
case("gen-odaaf-d", lambda: PW.generalized_odaaf(-1), VE, r"\bd\b")
case("f-poly-c", lambda: PW.f_poly(c=0.5), VE, r"\bc\b")
case("f-exp2-c", lambda: PW.f_exp2(c=21), VE, r"\bc\b")
case("exp3-block-table-horizon", lambda: PW.exp3_block_table(2**25), VE, "horizon")

# simulate / simulate_grid arguments
U1 = P.ucb1()
case("sim-horizon-zero", lambda: simulate(ENV, C.attributed(), U1, 0, KEY), VE, "horizon")
case("sim-horizon-2**24+1", lambda: simulate(ENV, C.attributed(), U1, 2**24 + 1, KEY), VE, r"horizon.*2\*\*24")
case("sim-horizon-1e9", lambda: simulate(ENV, C.attributed(), U1, 10**9, KEY), VE, "horizon")
case("sim-horizon-frac", lambda: simulate(ENV, C.attributed(), U1, 10.5, KEY), TE, "horizon")
case("sim-horizon-str", lambda: simulate(ENV, C.attributed(), U1, "10", KEY), TE, "horizon")
case("sim-runs-zero", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, 0), VE, "n_runs")
case("sim-runs-int32", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, 2**31), VE, "n_runs")
case("sim-seed-neg", lambda: simulate(ENV, C.attributed(), U1, 10, -1), VE, "key")
case("sim-seed-2**64", lambda: simulate(ENV, C.attributed(), U1, 10, 2**64), VE, r"key.*2\*\*64")
case("sim-seed-str", lambda: simulate(ENV, C.attributed(), U1, 10, "0"), TE, "key")
case("sim-seed-float", lambda: simulate(ENV, C.attributed(), U1, 10, 1.0), TE, "key")
KEYS2 = jax.random.split(KEY, 2)
case("sim-key-batch", lambda: simulate(ENV, C.attributed(), U1, 10, KEYS2), VE, "key")
case("sim-record-range", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, record=np.array([3, 20])), VE, "record")
case("sim-record-zero", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, record=0), VE, "record")
case("sim-chunk-zero", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, chunk=0), VE, "chunk")
case("sim-first-run", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, first_run=-1), VE, "first_run")
case("sim-shard", lambda: simulate(ENV, C.attributed(), U1, 10, KEY, shard=0), VE, "shard")
case("sim-no-policies", lambda: simulate(ENV, C.attributed(), {}, 10, KEY), VE, "policies")
case("sim-policy-str", lambda: simulate(ENV, C.attributed(), {"x": "ucb"}, 10, KEY), TE, "policy")
case("sim-policy-list", lambda: simulate(ENV, C.attributed(), [P.ucb1()], 10, KEY), TE, "give a dict")
case("sim-policy-empty", lambda: simulate(ENV, C.attributed(), {}, 10, KEY), VE, "empty")
case("sim-world-str", lambda: simulate("bernoulli", C.attributed(), U1, 10, KEY), TE, "world")
case("sim-channel-str", lambda: simulate(ENV, "attributed", U1, 10, KEY), TE, "channel")
case("sim-needs", lambda: simulate(ENV, C.anonymous(), U1, 10, KEY), VE, "cannot run on the channel")
case("sim-width-memory", lambda: simulate(ENV, C.attributed(width=2**30), U1, 10, KEY, 4), VE, "width")
case("sim-delayed-regret", lambda: simulate(OBLIVIOUS, C.attributed(), DEW, 10, KEY,
                                            delayed_regret=True), VE, "delayed_regret")
case("grid-empty", lambda: simulate_grid(lambda m: (E.bernoulli([m, 0.5]), U1), {}, C.attributed(), 10, KEY), VE, "grid")
case("grid-lengths", lambda: simulate_grid(lambda a, b: (E.bernoulli([a, b]), U1), {"a": [0.1, 0.2], "b": [0.3]},
                                           C.attributed(), 10, KEY), VE, "grid")
case("grid-point", lambda: simulate_grid(lambda m: (E.bernoulli([m, 0.5]), U1), {"m": [1.5, 0.2]}, C.attributed(), 10,
                                         KEY), VE, "means")
case("grid-horizon", lambda: simulate_grid(lambda m: (E.bernoulli([m, 0.5]), U1), {"m": [0.2]}, C.attributed(), 2**25,
                                           KEY), VE, "horizon")


# experiments: run options and --set overrides (through experiments.run, so the whole path)
def run(name, **kw):
    return lambda: X.run(name, **kw)


def xcase(id_, fn, exc, pattern):
    """An experiment case: its builder makes valid components (eager array operations) before it
    meets the bad value; no program may compile."""
    case(id_, fn, exc, pattern, eager=True)


xcase("run-runs-zero", run("quickstart", runs=0), VE, "runs")
xcase("run-horizon-huge", run("quickstart", horizon=2**25), VE, "horizon")
xcase("run-seed-neg", run("quickstart", seed=-1), VE, "seed")
xcase("run-seed-2**64", run("quickstart", seed=2**64), VE, "seed")
xcase("run-seed-float", run("quickstart", seed=1.5), TE, "seed")
xcase("run-chunk-zero", run("quickstart", chunk=0), VE, "chunk")
xcase("run-unknown-key", run("quickstart", overrides={"bogus": 1}), VE, "bogus")
xcase("run-overrides-list", run("quickstart", overrides=["theta=1"]), TE, "overrides")
xcase("set-theta-empty", run("quickstart", overrides={"theta": []}), VE, "theta")
xcase("set-theta-str", run("quickstart", overrides={"theta": "abc"}), VE, "theta")
xcase("set-theta-entry-str", run("quickstart", overrides={"theta": [0.5, "a"]}), VE, "theta")
xcase("set-theta-f32", run("quickstart", overrides={"theta": [0.5, BIG]}), VE, "theta")
xcase("set-theta-range", run("quickstart", overrides={"theta": [0.5, 1.5]}), VE, "theta")
xcase("set-delay-mean-neg", run("quickstart", overrides={"delay_mean": -1.0}), VE, "mean")
xcase("set-delay-mean-f32", run("quickstart", overrides={"delay_mean": BIG}), VE, "delay_mean")
xcase("set-delay-mean-nan", run("quickstart", overrides={"delay_mean": float("nan")}), VE, "delay_mean")
xcase("set-delay-mean-str", run("quickstart", overrides={"delay_mean": "slow"}), VE, "delay_mean")
xcase("set-window-neg", run("quickstart", overrides={"window": -1}), VE, "window")
xcase("set-window-frac", run("quickstart", overrides={"window": 2.5}), VE, "window")
xcase("set-window-list", run("quickstart", overrides={"window": [1]}), VE, "window")
xcase("set-window-int32", run("quickstart", overrides={"window": 2**31}), VE, "window")
xcase("set-n-arms-one", run("classic-bernoulli", overrides={"n_arms": 1}), VE, "n_arms")
xcase("set-n-arms-float", run("classic-bernoulli", overrides={"n_arms": 1e6}), VE, "n_arms")
xcase("set-n-arms-int32", run("classic-bernoulli", overrides={"n_arms": 2**31}), VE, "n_arms")
xcase("set-high", run("classic-bernoulli", overrides={"high": 2.0}), VE, "means")
xcase("set-max-delay-int32", run("classic-delayed", overrides={"max_delay": 2**31 - 1}), VE, r"\bhi\b")
xcase("set-max-delay-neg", run("classic-delayed", overrides={"max_delay": -1}), VE, r"\bhi\b")
xcase("set-mean-delays-empty", run("pikeburke2018-fig3a", overrides={"mean_delays": []}), VE, "mean_delays")
xcase("set-mean-delays-str", run("pikeburke2018-fig3a", overrides={"mean_delays": ["ten"]}), VE, "mean_delays")
xcase("set-poisson-1e7", run("pikeburke2018-fig3b", overrides={"mean_delays": [10**7]}), VE, "lam")
xcase("set-means-one-arm", run("pikeburke2018-fig3a", overrides={"means": [0.5]}), VE, "means")
xcase("set-vernade-mu", run("vernade2017-fig1", overrides={"mu": -1.0}), VE, r"\bmu\b")
xcase("set-vernade-rho-mode", run("vernade2017-fig1", overrides={"rho_from_mean": "x"}), VE, "rho_from_mean")
xcase("set-vernade-eps", run("vernade2017-fig1", overrides={"eps": -1.0}), VE, "eps")
xcase("set-vernade-window", run("vernade2017-fig2", overrides={"window": 2**25}), VE, "window")
xcase("set-vernade-theta", run("vernade2017-fig1", overrides={"theta_L": [0.1, 1.1]}), VE, "theta_L")
xcase("set-thune-delays", run("thune2019-bounds", overrides={"delays": [-1]}), VE, "delays")
xcase("set-thune-log2T-huge", run("thune2019-example8", overrides={"log2_T": [30]}), VE, "log2_T")
xcase("set-thune-log2T-empty", run("thune2019-heavy-tail", overrides={"log2_T": []}), VE, "log2_T")
xcase("set-thune-gap", run("thune2019-example8", overrides={"gap": 0.75}), VE, "gap")
xcase("sweep-horizon-and-log2T", run("thune2019-example8", horizon=4096, overrides={"log2_T": [12]}), VE, "log2_T")
xcase("sweep-horizon-and-key", run("pikeburke2018-appF", horizon=1000, overrides={"horizon": 2000}), VE, "horizon")
xcase("sweep-chunk", run("thune2019-bounds", chunk=100), VE, "chunk")
xcase("study-horizon", run("bayes-fit-recovery", horizon=100), VE, "horizon")
xcase("set-wang-stream-length", run("wang2021-fig5", overrides={"stream_length": 2**25}), VE, "horizon")
xcase("set-wang-stream-seed", run("wang2021-fig5", overrides={"stream_seed": -5}), VE, "seed")
xcase("set-wang-profiles", run("wang2021-fig3", overrides={"profiles": [[1, 2, 3]]}), VE, "profiles")
xcase("set-appf-one-delay", run("pikeburke2018-appF", overrides={"delays": [5, 5]}), VE,
      r"delays: at least 2 distinct E\[tau\] values")
xcase("set-wang-fig3-seven-profiles", run("wang2021-fig3", overrides={"profiles": [["interval", 1, 2]] * 7}), VE,
      "profiles: 1 to 6 entries")
xcase("set-wang-fig3-no-profiles", run("wang2021-fig3", overrides={"profiles": []}), VE, "profiles. must be a non-empty list")
xcase("set-wang-fig4-five-profiles", run("wang2021-fig4", overrides={"profiles": [["discounted", 0.5]] * 5}), VE,
      "profiles: 1 to 4 entries")
xcase("set-wang-alphas", run("wang2021-fig2", overrides={"alphas": [0]}), VE, "alpha")
xcase("set-bayes-window", run("bayes-ts-shared-delay", overrides={"window": 0}), VE, "window")
xcase("set-settings-entry", run("vernade2020-fig1", overrides={"settings": [[100, "a"]]}), VE, "settings")
xcase("set-settings-float", run("vernade2020-fig1", overrides={"settings": [[100.5, 2]]}), VE, "settings")
xcase("set-action-sets", run("vernade2020-fig1", overrides={"action_sets": ["binary", 3]}), VE, "action_sets")


@pytest.mark.parametrize("fn,exc,pattern,eager", CASES)
def test_bad_input_is_refused_before_compiling(fn, exc, pattern, eager):
    expect_error(fn, exc, pattern, eager)


# ----------------------------------------------------------------------------- fit logs (CSV files)
HEADER = "arm,play_time,conversion_time,cutoff\n"
CSV_CASES = [
    ("arm-1e300", "1e300,0,1,10\n2e300,1,,10\n", r"row 1 \(line 2\), column 'arm'"),
    ("arm-fraction", "0,0,1,10\n1.5,1,,10\n", r"row 2 \(line 3\), column 'arm'"),
    ("arm-missing", "0,0,1,10\n,1,,10\n", r"row 2 \(line 3\), column 'arm'"),
    ("arm-negative", "0,0,1,10\n-3,1,,10\n", r"row 2 \(line 3\), column 'arm'"),
    ("play-nan", "0,nan,1,10\n1,1,,10\n", r"row 1 \(line 2\), column 'play_time'"),
    ("play-empty", "0,,1,10\n1,1,,10\n", r"row 1 \(line 2\), column 'play_time'"),
    ("play-negative", "0,-2,1,10\n1,1,,10\n", r"row 1 \(line 2\), column 'play_time'"),
    ("play-not-number", "0,0,1,10\n1,abc,,10\n", r"row 2 \(line 3\), column 'play_time'"),
    ("conversion-before-play", "0,5,1,10\n1,1,,10\n", r"row 1 \(line 2\), column 'conversion_time'"),
    ("conversion-inf", "0,0,inf,10\n1,1,,10\n", r"row 1 \(line 2\), column 'conversion_time'"),
    ("conversion-f32", "0,0,1e39,1e38\n1,1,,10\n", r"row 1 \(line 2\), column 'conversion_time'"),
    ("cutoff-before-play", "0,5,,3\n1,1,,10\n", r"row 1 \(line 2\), column 'cutoff'"),
    ("cutoff-f32", "0,0,1,1e39\n1,1,,10\n", r"row 1 \(line 2\), column 'cutoff'"),
    ("cutoff-inf", "0,0,1,inf\n1,1,,10\n", r"row 1 \(line 2\), column 'cutoff'"),
    ("mixed-kinds", "0,0,1,10\n1,2024-01-01,,10\n", r"play_time"),
]


@pytest.mark.parametrize("body,pattern", [pytest.param(b, p, id=i) for i, b, p in CSV_CASES])
def test_bad_fit_csv_names_row_and_column(tmp_path, body, pattern):
    path = tmp_path / "log.csv"
    path.write_text(HEADER + body)
    msg = expect_error(lambda: L.load_log(str(path)), ValueError, pattern)
    assert str(path) in msg


STRUCTURE_CASES = [
    pytest.param("", "empty file", id="empty-file"),
    pytest.param(HEADER, "no data rows", id="header-only"),
    pytest.param("arm,play_time,cutoff\n0,1,2\n", "missing column", id="missing-column"),
]


@pytest.mark.parametrize("text,pattern", STRUCTURE_CASES)
def test_bad_fit_csv_structure(tmp_path, text, pattern):
    path = tmp_path / "log.csv"
    path.write_text(text)
    expect_error(lambda: L.load_log(str(path)), ValueError, pattern)


def _good_log():
    return L.conversion_log([0, 1, 1], [0.0, 1.0, 2.0], [1.0, float("nan"), 4.0], 10.0)


LOG_CASES = [
    pytest.param(lambda: L.conversion_log([0, 1], [0, 1], [np.nan] * 2, 5.0, n_arms=10**9), VE, "n_arms", id="n-arms-1e9"),
    pytest.param(lambda: L.conversion_log([0, 1], [0, 1], [np.nan] * 2, 5.0, n_arms=1.5), TE, "n_arms", id="n-arms-frac"),
    pytest.param(lambda: L.conversion_log([0, 1], [0, 1], [np.nan] * 2, 5.0, arms=list(range(L.MAX_ARMS + 1))), VE,
                 "arms", id="arms-too-many"),
    pytest.param(lambda: L.conversion_log(np.arange(L.MAX_ARMS + 1), np.zeros(L.MAX_ARMS + 1),
                                          np.full(L.MAX_ARMS + 1, np.nan), 5.0), VE, "arm", id="distinct-arms"),
]


@pytest.mark.parametrize("fn,exc,pattern", LOG_CASES)
def test_bad_log_arrays(fn, exc, pattern):
    expect_error(fn, exc, pattern)


FIT_CASES = [
    pytest.param({"window": float("inf")}, "window", id="window-inf"),
    pytest.param({"window": float("nan")}, "window", id="window-nan"),
    pytest.param({"window": -1.0}, "window", id="window-neg"),
    pytest.param({"seed": -1}, "seed", id="seed-neg"),
    pytest.param({"seed": 2**64}, "seed", id="seed-2**64"),
    pytest.param({"num_chains": 0}, "num_chains", id="chains-zero"),
    pytest.param({"method": "mcmc"}, "method", id="method"),
]


@pytest.mark.parametrize("kw,pattern", FIT_CASES)
def test_bad_fit_arguments(kw, pattern):
    from jaxbandits import bayes as B

    log = _good_log()
    expect_error(lambda: B.fit(log, "exponential", **kw), (ValueError, TypeError), pattern)


def test_catalogue_size():
    """The issue asks for at least 150 bad inputs."""
    n = len(CASES) + len(CSV_CASES) + len(STRUCTURE_CASES) + len(LOG_CASES) + len(FIT_CASES)
    assert n >= 150, n


# ----------------------------------------------------------------------------- bounded time
TIMED = textwrap.dedent("""
    import time, sys, os
    import numpy as np
    t0 = time.perf_counter()
    from jaxbandits import delays as D
    from jaxbandits.delaymodels import logs as L
    out = {}

    def timed(name, fn):
        t = time.perf_counter()
        try:
            r = fn()
            res = "ok " + repr(r)
        except (ValueError, TypeError) as e:
            res = "refused " + str(e)[:80]
        out[name] = (time.perf_counter() - t, res)

    timed("poisson_1e7", lambda: D.poisson(1e7))
    timed("histogram_1e9", lambda: D.histogram(np.broadcast_to(np.float32(1), (10**9,))))
    timed("from_samples_1e9", lambda: D.from_samples([0, 10**9]))
    timed("fixed_never", lambda: int(D.fixed(2**30).support_max))
    path = sys.argv[1]
    with open(path, "w") as fh:
        fh.write("arm,play_time,conversion_time,cutoff\\n0,0,1,10\\n1000000,1,,10\\n1e6,2,4,10\\n")
    timed("arm_1e6", lambda: (L.load_log(path).n_arms, L.load_log(path).arm_labels))
    timed("poisson_max_sample", lambda: int(D.poisson(D.MAX_POISSON_MEAN).ppf(np.float32(0.999))))
    for k, (dt, res) in out.items():
        print(f"{k}\\t{dt:.3f}\\t{res}")
""")


def test_costly_inputs_are_bounded(tmp_path):
    """A Poisson mean of 1e7 (its CDF table of 1e7 incomplete-gamma terms hung), a histogram of 1e9
    lanes, samples up to 1e9 (a bincount of 1e9 counters) are refused at once; a log whose arm
    label is 1e6 costs one arm index, not a million; all in a subprocess under a timeout."""
    r = subprocess.run([sys.executable, "-c", TIMED, str(tmp_path / "log.csv")], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    rows = {ln.split("\t")[0]: ln.split("\t")[1:] for ln in r.stdout.strip().splitlines()}
    for name in ("poisson_1e7", "histogram_1e9", "from_samples_1e9"):
        dt, res = rows[name]
        assert res.startswith("refused") and float(dt) < 2.0, (name, dt, res)
    assert "lam" in rows["poisson_1e7"][1] and "pmf" in rows["histogram_1e9"][1]
    dt, res = rows["arm_1e6"]
    assert res == "ok (2, (0, 1000000))" and float(dt) < 5.0, (dt, res)
    dt, res = rows["poisson_max_sample"]
    assert res.startswith("ok") and float(dt) < 10.0, (dt, res)
    assert rows["fixed_never"][1] == f"ok {NEVER}"


# ----------------------------------------------------------------------------- int32 delays
def test_uniform_at_never_draws_in_range():
    """The largest accepted uniform law (hi = NEVER) draws delays in [lo, hi]; its width hi - lo + 1
    and lo + floor(u n) fit int32 (hi = 2**31 - 1 used to wrap to negative delays)."""
    law = D.uniform(0, NEVER)
    u = jnp.asarray([1e-7, 0.25, 0.5, 0.999999, 1 - 2.0**-24], jnp.float32)
    d = np.asarray(law.ppf(u), np.int64)
    assert ((d >= 0) & (d <= NEVER)).all() and d[-1] > NEVER // 2, d
    s = np.asarray(law.sample(jax.random.key(1), (4096,)), np.int64)
    assert s.min() >= 0 and s.max() <= NEVER and abs(s.mean() / NEVER - 0.5) < 0.05


def test_shift_and_sequence_saturate_at_never():
    law = D.shift(D.two_point(1.0, NEVER), NEVER - 1)
    assert int(law.ppf(jnp.float32(0.5))) == NEVER and law.support_max == NEVER
    seq = D.sequence([0, 5, 10**30, 2**70, NEVER + 3])  # no int64 wrap-around of huge values
    np.testing.assert_array_equal(np.asarray(seq.delays), [0, 5, NEVER, NEVER, NEVER])


def test_from_samples_max_delay_clips():
    law = D.from_samples([0, 3, 10**9], max_delay=5)
    assert law.probs.shape == (6,) and float(law.probs[5]) == pytest.approx(1 / 3)


# ----------------------------------------------------------------------------- seeds
def test_seed_keys_below_2_32_are_unchanged_and_wide_seeds_do_not_alias():
    kd = lambda k: tuple(np.asarray(jax.random.key_data(k)).tolist())
    for s in (0, 1, 12345, 2**31 - 1, 2**31, 2**32 - 1):
        assert kd(V.seed_key(s)) == kd(jax.random.key(s))
    seeds = [0, 5, 2**32, 2**32 + 5, 2**33 + 5, 2**40, 2**63, 2**64 - 1, 2**64 - 2**32 + 5]
    keys = [kd(V.seed_key(s)) for s in seeds]
    assert len(set(keys)) == len(seeds), keys
    assert kd(V.seed_key(2**64 - 1)) == kd(jax.random.fold_in(jax.random.key(2**32 - 1), 2**32 - 1))


def test_simulate_takes_64_bit_seeds():
    T = 50
    a = simulate(ENV, C.attributed(), U1, T, 7, record=T)
    b = simulate(ENV, C.attributed(), U1, T, jax.random.key(7), record=T)
    c = simulate(ENV, C.attributed(), U1, T, 7 + 2**32, record=T)
    d = simulate(ENV, C.attributed(), U1, T, 2**64 - 1, record=T)
    np.testing.assert_array_equal(a.pulls, b.pulls)  # an int seed below 2**32 is key(seed), as before
    np.testing.assert_array_equal(a.reward, b.reward)
    assert not np.array_equal(a.reward, c.reward) or not np.array_equal(a.pulls, c.pulls)
    assert np.isfinite(d.reward).all()


# ----------------------------------------------------------------------------- horizon bound and counts
def test_horizon_bound_matches_float32_counts():
    """The bound is where float32 counting stops: 2**24 + 1 is not a float32."""
    assert float(np.float32(V.MAX_HORIZON)) == V.MAX_HORIZON
    assert float(np.float32(V.MAX_HORIZON) + np.float32(1)) == V.MAX_HORIZON
    assert V.horizon("horizon", V.MAX_HORIZON) == V.MAX_HORIZON
    with pytest.raises(ValueError, match=r"horizon.*2\*\*24"):
        V.horizon("horizon", V.MAX_HORIZON + 1)


@pytest.mark.slow
def test_counts_exact_at_the_largest_horizon():
    """A run of 2**24 rounds (the largest accepted horizon, more than 1e7): the policy's float32
    counts equal the recorder's int32 pulls exactly and sum to the horizon."""
    from conftest import final_carry

    T = V.MAX_HORIZON
    env = E.bernoulli([0.9, 0.1])
    st_ = final_carry(env, C.attributed(), P.ucb1(), T).policy
    n = np.asarray(P.counts(st_), np.float64).reshape(-1)
    assert n.sum() == T and n.max() > 2**23, n
    o = simulate(env, C.attributed(), P.ucb1(), T, jax.random.key(0), record=T)
    np.testing.assert_array_equal(np.asarray(o.pulls)[0, -1], n.astype(np.int64))


# ----------------------------------------------------------------------------- property tests
PROP = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
SPECIAL = [0.0, -0.0, 1e-45, 1e-38, 1e-30, 1e-8, 0.01, 0.5, 1.0, 2.0, 15.0, 16.0, 100.0, 101.0, 1000.0, 1e4, 1e7,
           1e9, 2.0**30, 2.0**30 + 1, 2.0**31 - 1, 2.0**31, 1e30, 3.4e38, 1e39, float("inf"), float("nan"), -1.0, -101.0]
EXTREME = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(min_value=-200.0, max_value=2.0**31))
U = jnp.asarray([1e-7, 0.01, 0.5, 0.99, 1 - 2.0**-24], jnp.float32)
N = jnp.asarray([0, 1, 10, 1000, 2**20, NEVER - 1], jnp.int32)

LAWS = {
    "geometric": (lambda a, b: D.geometric(a), "rho"),
    "geometric_mean": (lambda a, b: D.geometric(mean=a), "mean"),
    "poisson": (lambda a, b: D.poisson(a), "lam"),
    "exponential": (lambda a, b: D.exponential(a), "scale"),
    "half_normal": (lambda a, b: D.half_normal(a), "sigma"),
    "weibull": (lambda a, b: D.weibull(a, b), "shape|scale"),
    "log_normal": (lambda a, b: D.log_normal(a, b), "mu|sigma"),
    "pareto": (lambda a, b: D.pareto(a, b), "alpha|scale"),
    "two_point": (lambda a, b: D.two_point(a, int(b) if math.isfinite(b) else b), r"\bp\b|\bd\b"),
    "uniform": (lambda a, b: D.uniform(int(a), int(b)) if math.isfinite(a) and math.isfinite(b) else D.uniform(a, b),
                r"\blo\b|\bhi\b"),
}


def _check_law(law):
    c = np.asarray(law.cdf(N), np.float64)
    assert np.isfinite(c).all() and (c >= 0).all() and (c <= 1).all() and (np.diff(c) >= -1e-6).all(), c
    d = np.asarray(law.ppf(U), np.int64)
    assert ((d >= 0) & (d <= NEVER)).all() and (np.diff(d) >= 0).all(), d
    m = float(law.mean)
    assert not math.isnan(m) and m >= 0
    if not isinstance(law, D.Pareto):  # the Pareto law's mean is inf for alpha <= 1 (documented)
        assert math.isfinite(m), m


@pytest.mark.parametrize("kind", sorted(LAWS))
def test_delay_law_parameters_property(kind):
    make, names = LAWS[kind]

    @PROP
    @given(a=EXTREME, b=EXTREME)
    def prop(a, b):
        try:
            law = make(a, b)
        except (ValueError, TypeError) as e:
            assert re.search(names, str(e)), str(e)
            return
        _check_law(law)

    prop()


@PROP
@given(means=st.lists(EXTREME, min_size=2, max_size=3), sigma=EXTREME)
def test_gaussian_world_parameters_property(means, sigma):
    """Accepted Gaussian worlds have rewards whose sum over the longest horizon stays finite in
    float32: (|mean| + 6 sigma) 2**24 < float32 max."""
    try:
        env = E.gaussian(means, sigma=sigma)
    except (ValueError, TypeError) as e:
        assert re.search("means|sigma", str(e)), str(e)
        return
    bound = (np.abs(np.asarray(env.means_, np.float64)).max() + 6 * float(env.sigma)) * V.MAX_HORIZON
    assert bound < V.F32_MAX


@PROP
@given(means=st.lists(EXTREME, min_size=2, max_size=3))
def test_bernoulli_world_parameters_property(means):
    try:
        env = E.bernoulli(means)
    except (ValueError, TypeError) as e:
        assert "means" in str(e)
        return
    m = np.asarray(env.means_)
    assert np.isfinite(m).all() and (m >= 0).all() and (m <= 1).all()


# ----------------------------------------------------------------------------- memory, estimated on every path
def test_every_path_that_allocates_runs_estimates_memory_first(monkeypatch):
    """The fused path, a grid and a distributed run refuse, before compiling, what cannot fit (the
    scan path's rule), naming the runs, the record points and the state per run."""
    from jaxbandits.experiments.distributed import simulate_global
    from jaxbandits.engine import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 10_000)
    ch = C.attributed()
    msg = (r"needs at least [\d.]+ GiB \(64 runs x 1 policies: 100 record points and a carried state of \d+ bytes "
           r"per run, its calendar of width 1\), more than the 0.0 GiB of memory available")
    expect_error(lambda: simulate(ENV, ch, P.ucb1(), 100, KEY, 64, path="fused", record=1), ValueError, msg, eager=True)
    expect_error(lambda: simulate_global(ENV, ch, P.ucb1(), 100, KEY, 64, record=1), ValueError, msg, eager=True)
    expect_error(lambda: simulate_grid(lambda alpha: (ENV, P.ucb1(alpha=alpha)),
                                       {"alpha": np.array([1.0, 2.0, 3.0])}, ch, 100, KEY, 64),
                 ValueError, r"\(64 runs x 3 grid points x 1 policies", eager=True)


def test_the_memory_estimate_counts_each_runs_carried_state_exactly():
    """The estimate's state term is the carried state's size (world, policy, calendar, keys,
    metrics), not the calendar alone: a policy holding a large state of its own is counted."""
    from typing import NamedTuple

    from jaxbandits import Policy
    from jaxbandits.engine import memory, programs
    from jaxbandits.engine.round import problem

    class Memo(NamedTuple):
        t: jax.Array

    pol = Policy(lambda spec, key: jnp.zeros((1000,), jnp.float32), lambda s, c, k: (jnp.int32(0), Memo(c.t)),
                 lambda s, a: s, lambda m, r, d: jnp.ones(1), name="big")
    prob = problem(ENV, C.conversions(window=50), pol, 100, n_runs=8)
    plan = programs.Plan(((pol.name, prob),), 1, False)
    carries = jax.eval_shape(lambda r: programs.init_program(plan, jax.random.key(0), r, None),
                             jax.ShapeDtypeStruct((8,), jnp.int32))
    exact = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(carries))
    rec = np.arange(9, 100, 10)
    assert memory.memory_estimate({"big": prob}, 8, rec, keep=0) == exact + 8 * 4 * (3 + 2 + 1)
    assert memory.memory_estimate({"big": prob}, 8, rec) == exact + 8 * 4 * (3 + 2 + 1) * len(rec)
    assert exact >= 8 * 4000  # the policy's own 1000 floats per run
