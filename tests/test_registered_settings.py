"""Every stated setting pinned: each registered experiment (the papers' reproductions, the studies
and the examples) is, at its default config, exactly what ``tests/data/registered_experiments.json``
records: its run settings (horizon, runs, record points, layout, checkpoints, metric, ...), its
config and, panel by panel, the world, channel and policies it builds, each written out field by
field. The reproductions' pages (docs/reproductions/) report numbers of these settings: a change
of any of them (a horizon, a grid point, a policy's parameter, a panel's world) must be made on
purpose, with the snapshot written again::

    python tests/test_registered_settings.py --update

and the diff read; a failure names the experiment and the first field that differs."""
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

SNAPSHOT = Path(__file__).resolve().parent / "data" / "registered_experiments.json"


def canon(x):
    """A JSON value of ``x`` that changes whenever ``x`` does: values field by field (with their
    type), arrays as dtype, shape and entries, functions by their qualified name."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {"type": type(x).__name__, **{f.name: canon(getattr(x, f.name)) for f in dataclasses.fields(x)
                                             if not f.name.startswith("_")}}
    if hasattr(x, "_asdict"):  # a NamedTuple
        return {"type": type(x).__name__, **{k: canon(v) for k, v in x._asdict().items()}}
    if isinstance(x, dict):
        return {str(k): canon(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canon(v) for v in x]
    if callable(x):
        return f"function {getattr(x, '__module__', '?')}.{getattr(x, '__qualname__', repr(x))}"
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        a = np.asarray(x)
        if a.dtype.kind == "V" or "key" in str(a.dtype):
            return repr(x)
        return {"dtype": a.dtype.str, "shape": list(a.shape),
                "entries": [float(v) if a.dtype.kind == "f" else int(v) for v in a.ravel()[:64]],
                "sum": float(a.astype(np.float64).sum()) if a.size else 0.0}
    if isinstance(x, float):
        return repr(x)
    if x is None or isinstance(x, (bool, int, str)):
        return x
    return repr(x)


#: built panels not recorded: their build runs a Bayesian fit (about 30 s here), too slow for the
#: default suite; their settings and config are recorded as every other's
BUILD_TOO_SLOW = {"bayes-ts-warm-start"}

SETTINGS = ("description", "horizon", "runs", "record", "metric", "chunk", "keep", "checkpoints", "layout",
            "ratio_to", "ignores", "horizon_keys", "ranges")


def snapshot():
    from jaxbandits.experiments import registry as X
    from jaxbandits.experiments.specs import Panel

    out = {}
    for name, e in sorted(X.load_all().items()):
        rec = {k: canon(getattr(e, k)) for k in SETTINGS}
        rec["config"] = canon(dict(e.config))
        rec["runner"] = canon(e.runner) if e.runner is not None else None
        if e.runner is None and name not in BUILD_TOO_SLOW:
            built = e.build(dict(e.config))
            panels = built if isinstance(built, list) else [Panel("", *built)]
            rec["panels"] = [{"name": p.name, "world": canon(p.env), "channel": canon(p.channel),
                              "policies": {lab: canon(pol) for lab, pol in p.policies.items()},
                              "log_lines": canon(p.log_lines)} for p in panels]
        out[name] = rec
    return json.loads(json.dumps(out))


def _first_difference(a, b, path=""):
    if type(a) is not type(b):
        return path, a, b
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}", a.get(k, "(absent)"), b.get(k, "(absent)")
            d = _first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length)", len(a), len(b)
        for i, (u, v) in enumerate(zip(a, b)):
            d = _first_difference(u, v, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else (path, a, b)


def test_every_registered_experiment_is_its_recorded_settings_and_panels():
    pinned = json.loads(SNAPSHOT.read_text())
    now = snapshot()
    assert sorted(now) == sorted(pinned), "experiments registered or removed: write the snapshot again"
    wrong = []
    for name in sorted(now):
        d = _first_difference(pinned[name], now[name], name)
        if d:
            wrong.append(f"{d[0]}: recorded {d[1]!r}, now {d[2]!r}")
    assert not wrong, "\n".join(wrong)


def test_the_snapshot_tells_a_change_of_any_field_apart():
    """The comparison itself: a changed entry, a longer list and a new key are each found."""
    a = {"e": {"horizon": 100, "config": {"alphas": [2, 4]}, "panels": [{"world": {"entries": [0.5]}}]}}
    assert _first_difference(a, json.loads(json.dumps(a))) is None
    b = json.loads(json.dumps(a)); b["e"]["config"]["alphas"][0] = 3
    assert _first_difference(a, b)[0] == ".e.config.alphas[0]"
    c = json.loads(json.dumps(a)); c["e"]["panels"][0]["world"]["entries"].append(0.1)
    assert _first_difference(a, c)[0] == ".e.panels[0].world.entries (length)"
    d = json.loads(json.dumps(a)); d["e"]["keep"] = "all"
    assert _first_difference(a, d)[0] == ".e.keep"
    assert canon(np.float32(0.5) * np.ones(2, np.float32)) != canon(np.ones(2, np.float32))


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
