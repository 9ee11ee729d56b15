import numpy as np


def actions_of(out):
    """Per-round actions from pulls recorded at every round (record=1): [runs, T]."""
    p = np.asarray(out.pulls)
    first = p[..., :1, :]
    d = np.concatenate([first, np.diff(p, axis=-2)], axis=-2)
    assert (d.sum(-1) == 1).all()
    return d.argmax(-1)
