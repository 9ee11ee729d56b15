"""The composite world's Beta totals (Wang et al. 2021's worlds, ``envs.composite``)."""
import jax
import numpy as np

from jaxbandits import envs as E


def test_composite_beta_totals_have_the_whole_beta_law_at_shapes_below_one():
    """The whole distribution: ``envs.composite(total="beta")`` draws each total from
    ``Beta(s k, (1 - s) k)``; at the default ``k = 2`` a mean below 1/2 puts a shape below 1 (and
    below 1/3 at s < 1/6), where the Marsaglia-Tsang sampler is not exact (or never accepts). Each
    arm's totals against scipy's Beta by Kolmogorov-Smirnov, and their mean against ``s``."""
    from scipy import stats

    means = [0.1, 0.3, 0.8]
    world = E.composite(means=means, profile=[1.0, 1.0], total="beta")
    keys = jax.random.split(jax.random.key(5), 4000)
    st = world.setup(keys[0])
    for a, s in enumerate(means):
        r = np.asarray(jax.jit(jax.vmap(lambda k: world.outcome(st, 0, a, 0.5, 0.5, None, k)[0].reward))(keys),
                       np.float64)
        assert np.isfinite(r).all() and ((r >= 0) & (r <= 1)).all()
        assert stats.kstest(r, stats.beta(2 * s, 2 * (1 - s)).cdf).pvalue > 1e-3, (a, s)
        assert abs(r.mean() - s) < 4 * np.sqrt(s * (1 - s) / 3 / 4000), (a, r.mean())
