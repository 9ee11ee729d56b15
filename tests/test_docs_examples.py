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


def test_envs_page_world_runs():
    ns = {}
    exec(_blocks("envs.md")[-1], ns)
    import jax

    import jaxbandits as jb
    from jaxbandits import channels
    from jaxbandits.policies import classic

    out = jb.simulate(ns["Seasonal"](0.3, 24), channels.attributed(), classic.ucb1(), 200, jax.random.key(0), 2)
    assert out.width == 3 and np.isfinite(out.regret).all()
