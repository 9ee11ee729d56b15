"""Write the small synthetic conversion log used by the docs and `jaxbandits fit`:
3 arms with p = (0.05, 0.10, 0.15), Weibull delays (mean 50, shape 1.5), 5000 plays spread over
[0, 1000), observed at cutoff 1000 (numpy seed 0).

    python experiments/make_example_log.py   # -> experiments/data/example_log.csv
"""
import os

import numpy as np

from jaxbandits import bayes as B

if __name__ == "__main__":
    log = B.synthetic_log([0.05, 0.10, 0.15], 5000, span=1000.0, cutoff=1000.0, delay="weibull", mean=50.0,
                          shape=1.5, seed=0)
    path = os.path.join(os.path.dirname(__file__), "data", "example_log.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    B.write_log(path, log)
    print(f"wrote {path}: {len(log)} plays, {int((~np.isnan(log.conversion_time)).sum())} conversions seen")
