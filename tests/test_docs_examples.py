"""The runnable examples of the docs run as written (docs/composing.md, docs/envs.md)."""
import re
from pathlib import Path

import numpy as np

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _blocks(page):
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)


def test_composing_page_runs_and_matches_simulate():
    ns = {}
    blocks = _blocks("composing.md")
    exec(blocks[1], ns)  # the user's own scan with a metric of their own
    exec(blocks[2], ns)  # the user's channel
    jb, key = ns["jb"], ns["key"]
    out = jb.simulate(ns["world"], ns["prob"].channel, ns["prob"].policy, 2000, key, 256)
    # the page's own scan (plain float32 sums) against simulate's Kahan sums
    np.testing.assert_allclose(np.asarray(ns["regret"]), out.regret[:, -1], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(ns["share_best"]), out.pulls[:, -1, 0] / 2000)
    ch = ns["BatchedPostbacks"](batch=24)
    from jaxbandits.policies import classic

    res = jb.simulate(ns["world"], ch, classic.ucb1(), 500, key, 4)
    assert np.isfinite(res.regret).all()


def test_composing_page_random_channel_is_the_users_channel():
    """The page's random channel (conversions reported for a random 70%) runs as written and gives
    bitwise the numbers of the same channel written as a user's (tests/user_components.py)."""
    from user_components import SampledConversions

    ns = {}
    blocks = _blocks("composing.md")
    exec(blocks[1], ns)  # world, key, imports
    exec(blocks[3], ns)  # the random channel and its simulate
    jb, key = ns["jb"], ns["key"]
    from jaxbandits.policies import classic

    mine = jb.simulate(ns["world"], SampledConversions(0.7), classic.thompson(), 2000, key, 64)
    for f in ("regret", "pulls", "reward"):
        np.testing.assert_array_equal(getattr(ns["out"], f), getattr(mine, f))


def test_envs_page_world_runs():
    ns = {}
    exec(_blocks("envs.md")[-1], ns)
    import jax

    import jaxbandits as jb
    from jaxbandits import channels
    from jaxbandits.policies import classic

    out = jb.simulate(ns["Seasonal"](0.3, 24), channels.attributed(), classic.ucb1(), 200, jax.random.key(0), 2)
    assert out.width == 3 and np.isfinite(out.regret).all()


def test_own_policy_page_runs_and_is_exact():
    """docs/policies/own.md as written, then its policy on a world whose regret is known exactly:
    means (0, 1), fixed delay 5, eps=0: arm 0 (first of the untried) is played until round 0's
    record arrives at the end of round 5, then arm 1 for ever: regret exactly 6."""
    import jax

    from jaxbandits import channels, delays, envs

    ns = {}
    blocks = _blocks("policies/own.md")
    exec(blocks[0], ns)
    exec(blocks[1], ns)
    out = ns["out"]
    for name in ns["pols"]:
        assert np.isfinite(out[name].regret).all()
    jb = ns["jb"]
    world = envs.bernoulli([0.0, 1.0], delay=delays.fixed(5))
    res = jb.simulate(world, channels.attributed(), ns["eps_greedy"](0.0), 50, jax.random.key(1), 3)
    np.testing.assert_array_equal(np.asarray(res.regret)[:, -1], 6.0)
    page = (DOCS / "policies/own.md").read_text()
    from jaxbandits.core.types import Arrivals, Context, ProblemSpec

    for rec in (Context, Arrivals, ProblemSpec):  # every field of the records is listed on the page
        for f in rec._fields:
            assert f"| `{f}` |" in page, (rec.__name__, f)
    with np.testing.assert_raises(ValueError):
        ns["eps_greedy"](1.5)


def test_contributing_page_policy_runs_and_is_exact():
    """docs/contributing.md's worked policy as written: a value (equal parameters, equal policies),
    its docstring's example, its host-side check, and its exact regret: on means (0, 1) without
    delay, explore-then-commit(m) plays arm 0 exactly m times, then arm 1 for ever (regret m)."""
    import doctest

    import jax

    from jaxbandits import channels, envs

    ns = {}
    blocks = _blocks("contributing.md")
    exec(blocks[0], ns)
    exec(blocks[1], ns)
    etc = ns["explore_then_commit"]
    assert repr(etc(5)) == "ExploreThenCommit(m=5)" and etc(5) == etc(5) and hash(etc(5)) == hash(etc(5))
    for name, o in ns["out"].items():
        assert np.isfinite(np.asarray(o.regret)).all(), name
    jb = ns["jb"]
    res = jb.simulate(envs.bernoulli([0.0, 1.0]), channels.attributed(), etc(7), 60, jax.random.key(3), 3)
    np.testing.assert_array_equal(np.asarray(res.regret)[:, -1], 7.0)
    with np.testing.assert_raises_regex(ValueError, "m must"):
        etc(0)
    t = doctest.DocTestFinder().find(etc, "explore_then_commit", module=False, globs=ns)[0]
    assert doctest.DocTestRunner().run(t).failed == 0
