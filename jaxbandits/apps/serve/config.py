"""The configuration of ``jaxbandits serve``: :class:`ServeConfig` (the arms, the policy and its
parameters, the channel and its window, the clock, the seed and the service's limits), read from a
TOML or JSON file (:func:`load_config`) or built from command-line flags
(:func:`config_from_args`), checked before anything compiles; an error names the key.
"""
import dataclasses
import difflib
import inspect
import json
import os
from typing import Any, Dict, List, Optional

from ...core import validate as V
from ...core.delays import DELAY_LAWS, delay_law


#: The policy table's keys that are not the policy's parameters: the exploration floor and the Monte
#: Carlo sample size of logged propensities (docs/ope.md, *Logging*).
LOGGING_KEYS = ("explore", "propensity_samples")


DEFAULT_PROPENSITY_SAMPLES = 256


def policy_table():
    """``{name: constructor}`` of the policies a serve config may name (``[policy] name``).

    Returns:
        dict: the policy names of :data:`POLICIES`, each with its constructor in
        :mod:`jaxbandits.policies`.

    Example:
        >>> table = policy_table()
        >>> sorted(table) == sorted(POLICIES), table["ucb1"].__name__
        (True, 'ucb1')
    """
    from ...policies import bayes, classic
    from ...policies import conversions as C

    return {
        "ucb1": classic.ucb1, "kl_ucb": classic.kl_ucb, "thompson": classic.thompson,
        "delayed_ucb": C.delayed_ucb, "delayed_klucb": C.delayed_klucb,
        "discarding_ucb": C.discarding_ucb, "discarding_klucb": C.discarding_klucb,
        "delay_model_ts": bayes.delay_model_ts, "beta_ts": bayes.beta_ts,
    }


#: The policies a config may name (``[policy] name``), with the channels they take.
POLICIES = ("ucb1", "kl_ucb", "thompson", "delayed_ucb", "delayed_klucb", "discarding_ucb", "discarding_klucb",
            "delay_model_ts", "beta_ts")


CHANNELS = ("attributed", "conversions")


class ConfigKeyError(ValueError):
    """A config key that is not one of those allowed; ``path`` is the key's path in the config
    (``("policy", "delay", "shap")``), for :func:`load_config` to name its file and line."""

    def __init__(self, path: tuple, message: str):
        super().__init__(f"config key {'.'.join(map(str, path))!r}: {message}")
        self.path, self.message = tuple(path), message


def _unknown(path: tuple, keys, allowed, what: str) -> ConfigKeyError:
    """The error of the first of ``keys`` that ``allowed`` lacks, with the close matches."""
    k = sorted(map(str, keys))[0]
    close = difflib.get_close_matches(k, list(allowed), n=1)
    return ConfigKeyError(path + (k,), f"unknown key {k!r} in {what}" + (f" (did you mean {close[0]!r}?)" if close
                                                                          else "")
                          + f"; allowed: {', '.join(sorted(allowed))}")


def _policy_parameters(make) -> List[str]:
    """The parameters of a policy: the fields of the value its constructor makes (``label``, the
    display name, is the constructor's ``name``)."""
    return list(make.value_type.field_arguments())


def _parameters(fn) -> List[str]:
    return [n for n, p in inspect.signature(fn).parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                                   p.KEYWORD_ONLY)]


@dataclasses.dataclass
class ServeConfig:
    """What ``jaxbandits serve`` serves (the TOML/JSON keys, docs/online.md).

    ``arms``: names (strings); ``policy``: ``{"name": ..., parameters...}``, a ``delay``
    parameter being a table ``{"law": "geometric", "mean": 20.0}``; ``channel``: ``{"kind":
    "conversions", "window": m}`` or ``{"kind": "attributed"}``; ``clock``: ``None`` (one decision
    is one round) or ``{"origin": t0, "round_length": L}`` in the unit of the timestamps (requests
    without ``now`` then use the server's time, seconds since the epoch); ``max_batch``: the most
    decisions or events in one request; ``snapshot_every``: events logged between two snapshots;
    ``max_advance``: the most rounds one request may move the clock (each costs an ``update``).

    Attributes:
        arms: the arm names (strings).
        policy: ``{"name": one of POLICIES, parameters...}``.
        channel: ``{"kind": "attributed"}`` or ``{"kind": "conversions", "window": m}``.
        seed: the learner's seed (default 0).
        horizon: what the policy may plan for (``None``: ``2^30 - 1``).
        max_pending: slots of the pending ring (``None``: from the channel).
        clock: ``None`` or ``{"origin": t0, "round_length": L}``.
        max_batch: the most decisions or events in one request (default 1000).
        snapshot_every: events logged between two snapshots (default 1000).
        max_advance: the most rounds one request may move the clock (default ``10^7``).

    Example:
        >>> ServeConfig(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
        ServeConfig(arms=['a', 'b'], policy={'name': 'ucb1'}, channel={'kind': 'attributed'}, seed=0,
                    horizon=None, max_pending=None, clock=None, max_batch=1000, snapshot_every=1000,
                    max_advance=10000000)
    """

    arms: List[str]
    policy: Dict[str, Any]
    channel: Dict[str, Any]
    seed: int = 0
    horizon: Optional[int] = None
    max_pending: Optional[int] = None
    clock: Optional[Dict[str, Any]] = None
    max_batch: int = 1000
    snapshot_every: int = 1000
    max_advance: int = 10_000_000

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    def canonical(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def check(self) -> "ServeConfig":
        if not isinstance(self.arms, list) or not self.arms or not all(isinstance(a, str) and a for a in self.arms):
            raise ValueError(f"config key 'arms' must be a list of at least one non-empty string, got {self.arms!r}")
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"config key 'arms' must name distinct arms, got {self.arms!r}")
        V.seed("seed", self.seed)
        if self.horizon is not None:
            V.integer("horizon", self.horizon, lo=1)
        if self.max_pending is not None:
            V.integer("max_pending", self.max_pending, lo=1)
        V.integer("max_batch", self.max_batch, lo=1, hi=100_000)
        V.integer("snapshot_every", self.snapshot_every, lo=1)
        V.integer("max_advance", self.max_advance, lo=1)
        if not isinstance(self.channel, dict) or self.channel.get("kind") not in CHANNELS:
            raise ValueError(f"config key 'channel.kind' must be one of {list(CHANNELS)}, got "
                             f"{self.channel.get('kind') if isinstance(self.channel, dict) else self.channel!r}")
        extra = set(self.channel) - {"kind", "window"}
        if extra:
            raise _unknown(("channel",), extra, ["kind", "window"], "table 'channel'")
        if self.channel["kind"] == "conversions":
            if "window" not in self.channel:
                raise ValueError("config key 'channel.window' is required for the conversions channel (an integer "
                                 ">= 0, in rounds)")
            V.integer("channel.window", self.channel["window"], lo=0)
        elif "window" in self.channel:
            raise ValueError("config key 'channel.window' is for the conversions channel only")
        if not isinstance(self.policy, dict) or self.policy.get("name") not in POLICIES:
            raise ValueError(f"config key 'policy.name' must be one of {list(POLICIES)}, got "
                             f"{self.policy.get('name') if isinstance(self.policy, dict) else self.policy!r}")
        allowed = _policy_parameters(policy_table()[self.policy["name"]])
        extra = set(self.policy) - {"name"} - set(LOGGING_KEYS) - set(allowed)
        if extra:
            raise _unknown(("policy",), extra, ["name", *LOGGING_KEYS] + allowed, f"table 'policy' ({self.policy['name']})")
        if isinstance(self.policy.get("delay"), dict):
            law = self.policy["delay"].get("law")
            if law not in DELAY_LAWS:
                close = difflib.get_close_matches(str(law), DELAY_LAWS, n=1)
                raise ConfigKeyError(("policy", "delay", "law"), f"must be one of {list(DELAY_LAWS)}, got {law!r}"
                                     + (f" (did you mean {close[0]!r}?)" if close else ""))
            from ...core import delays

            allowed = _parameters(getattr(delays, law))
            extra = set(self.policy["delay"]) - {"law"} - set(allowed)
            if extra:
                raise _unknown(("policy", "delay"), extra, ["law"] + allowed, f"table 'policy.delay' ({law})")
        if "explore" in self.policy:
            e = self.policy["explore"]
            if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 <= e <= 1:
                raise ValueError(f"config key 'policy.explore' must be a number in [0, 1] (the exploration floor: "
                                 f"a uniformly drawn arm with that probability), got {e!r}")
        if "propensity_samples" in self.policy:
            V.integer("policy.propensity_samples", self.policy["propensity_samples"], lo=1, hi=2**16)
        if self.clock is not None:
            if isinstance(self.clock, dict) and set(self.clock) - {"origin", "round_length"}:
                raise _unknown(("clock",), set(self.clock) - {"origin", "round_length"}, ["origin", "round_length"],
                               "table 'clock'")
            if not isinstance(self.clock, dict):
                raise ValueError("config table 'clock' takes the keys origin and round_length (numbers, in the "
                                 f"unit of your timestamps), got {self.clock!r}")
            self._clock().check()
        return self

    def _clock(self):
        from ...online import Clock

        if self.clock is None:
            return None
        return Clock(self.clock.get("origin", 0), self.clock.get("round_length", 1))

    def build(self):
        """(policy, channel, clock): the objects the config describes. The policy and the channel
        are values, equal for the same config, so a restarted service reuses the compiled programs."""
        pol, ch, _ = self._built()
        return pol, ch, self._clock()

    def propensity_exact(self) -> bool:
        """Whether the logged propensities are exact: the policy (the base under an exploration
        floor) declares its law (``memo_probs``); else they are Monte Carlo estimates."""
        return self._built()[2]

    def _built(self):
        self.check()
        return self._build()

    def _build(self):
        from ... import channels

        ch = (channels.conversions(window=int(self.channel["window"])) if self.channel["kind"] == "conversions"
              else channels.attributed())
        params = {k: v for k, v in self.policy.items() if k != "name" and k not in LOGGING_KEYS}
        name = self.policy["name"]
        make = policy_table()[name]
        if isinstance(params.get("delay"), dict):  # its keys were checked by check()
            params["delay"] = delay_law(params["delay"])
        try:
            pol = make(**params)
        except TypeError as e:
            raise ValueError(f"config table 'policy' ({name}): {e}") from None
        exact = pol.memo_probs  # explore's law is exact when its base's is (docs/ope.md)
        eps = self.policy.get("explore", 0)
        if eps:
            from ...policies.explore import explore

            pol = explore(pol, eps, samples=self.propensity_samples())
        return pol, ch, exact

    def propensity_samples(self) -> int:
        """Monte Carlo draws of a logged propensity (``policy.propensity_samples``, default 256)."""
        return int(self.policy.get("propensity_samples", DEFAULT_PROPENSITY_SAMPLES))


def load_config(path=None, **overrides) -> ServeConfig:
    """A :class:`ServeConfig` from a TOML (``.toml``) or JSON file, then ``overrides`` (the
    command line's flags; ``None`` values are ignored). Unknown keys are refused, naming them.

    Args:
        path: the config file (``.json``: JSON, else TOML; limits may sit in a ``[serve]``
            table); ``None``: the overrides alone.
        **overrides: :class:`ServeConfig` fields (``policy`` and ``channel`` tables are merged
            into the file's); ``None`` values are ignored.

    Returns:
        ServeConfig: the configuration, checked.

    Raises:
        ValueError: a file that does not parse, an unknown key (named with its file and line),
            a missing ``arms``, ``policy`` or ``channel``, or a value out of its range.
        OSError: the file cannot be read.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "serve.toml")
        >>> with open(path, "w") as f:
        ...     _ = f.write('arms = ["a", "b"]\\n[policy]\\nname = "ucb1"\\n'
        ...                 '[channel]\\nkind = "conversions"\\nwindow = 50\\n')
        >>> cfg = load_config(path, seed=3)
        >>> cfg.arms, cfg.channel, cfg.seed
        (['a', 'b'], {'kind': 'conversions', 'window': 50}, 3)
        >>> load_config(path, colour="red")
        Traceback (most recent call last):
        ...
        ValueError: config key colour (given on the command line): unknown key 'colour' in the config; ...
    """
    raw: Dict[str, Any] = {}
    text = None
    if path is not None:
        path = os.fspath(path)
        with open(path, "rb") as fh:
            data = fh.read()
        text = data.decode(errors="replace")
        try:
            if path.endswith(".json"):
                raw = json.loads(data.decode())
            else:
                import tomllib

                raw = tomllib.loads(data.decode())
        except (ValueError, UnicodeDecodeError) as e:  # tomllib.TOMLDecodeError and JSONDecodeError
            from ...experiments.files import toml_error

            raise ValueError(f"{path}: not valid JSON: {e}" if path.endswith(".json")
                             else toml_error(path, data, e)) from None
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: must hold a table of keys (arms, policy, channel, ...), got {type(raw).__name__}")
        if "serve" in raw and isinstance(raw["serve"], dict):  # [serve] limits may sit in their own table
            raw = {**{k: v for k, v in raw.items() if k != "serve"}, **raw["serve"]}
    from_file = json.loads(json.dumps(raw, default=str))
    for k, v in overrides.items():
        if v is None:
            continue
        if k in ("policy", "channel") and isinstance(v, dict):
            raw[k] = {**raw.get(k, {}), **v}
        else:
            raw[k] = v
    fields = {f.name for f in dataclasses.fields(ServeConfig)}
    try:
        unknown = set(raw) - fields
        if unknown:
            raise _unknown((), unknown, fields, "the config")
        missing = [k for k in ("arms", "policy", "channel") if k not in raw]
        if missing:
            raise ValueError(f"{path or 'config'}: missing key(s) {missing} (give them in the file or as --arms, "
                             "--policy, --channel)")
        return ServeConfig(**raw).check()
    except ConfigKeyError as e:
        raise ValueError(f"{_where(path, text, from_file, e.path)}: {e.message}") from None


def _where(path, text, from_file, key) -> str:
    """``FILE, line N, key a.b`` of a config key (``given on the command line`` when the file does
    not hold it)."""
    dotted = ".".join(map(str, key))
    node = from_file
    for k in key:
        node = node.get(k) if isinstance(node, dict) else None
        if node is None:
            break
    if path is None or node is None:
        return f"config key {dotted}" + (" (given on the command line)" if path is not None else "")
    line = None
    if path.endswith(".json"):
        for n, ln in enumerate(text.split("\n"), 1):
            if f'"{key[-1]}"' in ln:
                line = n
                break
    else:
        from ...experiments.files import key_lines, line_of

        lines = key_lines(text)
        line = line_of(lines, key) or line_of(lines, ("serve",) + tuple(key))
    return f"{path}" + (f", line {line}" if line else "") + f", key {dotted}"


def _parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def config_from_args(a) -> ServeConfig:
    """The :class:`ServeConfig` of ``jaxbandits serve``'s arguments (a file, then the flags).

    Args:
        a: the parsed arguments (``argparse.Namespace``) of ``jaxbandits serve``: ``config``,
            ``arms`` (comma-separated), ``policy``, ``params`` (``KEY=VALUE`` strings),
            ``channel``, ``window``, ``origin``, ``round_length``, ``seed``, ``max_batch``,
            ``snapshot_every``, ``max_pending``, ``horizon``, ``max_advance`` (``None``: not
            given).

    Returns:
        ServeConfig: the file's configuration with the flags applied, checked.

    Raises:
        ValueError: a ``--param`` without ``=``, or what :func:`load_config` refuses.

    Example:
        >>> import argparse
        >>> flags = dict.fromkeys(["config", "window", "origin", "round_length", "seed", "max_batch",
        ...                        "snapshot_every", "max_pending", "horizon", "max_advance"])
        >>> a = argparse.Namespace(arms="a,b", policy="ucb1", params=["alpha=1.0"], channel="attributed", **flags)
        >>> cfg = config_from_args(a)
        >>> cfg.arms, cfg.policy
        (['a', 'b'], {'name': 'ucb1', 'alpha': 1.0})
    """
    policy = None
    if a.policy is not None or a.params:
        policy = {} if a.policy is None else {"name": a.policy}
        for kv in a.params:
            if "=" not in kv:
                raise ValueError(f"--param takes KEY=VALUE (e.g. window=200 or delay.mean=20.0), got {kv!r}")
            k, v = kv.split("=", 1)
            k = k.strip()
            if "." in k:
                outer, inner = k.split(".", 1)
                policy.setdefault(outer, {})[inner] = _parse_value(v)
            else:
                policy[k] = _parse_value(v)
    channel = None
    if a.channel is not None or a.window is not None:
        channel = {} if a.channel is None else {"kind": a.channel}
        if a.window is not None:
            channel["window"] = a.window
    clock = None
    if a.round_length is not None or a.origin is not None:
        clock = {"origin": a.origin if a.origin is not None else 0,
                 "round_length": a.round_length if a.round_length is not None else 1}
    arms = None if a.arms is None else [x.strip() for x in a.arms.split(",")]
    return load_config(a.config, arms=arms, policy=policy, channel=channel, seed=a.seed, clock=clock,
                       max_batch=a.max_batch, snapshot_every=a.snapshot_every, max_pending=a.max_pending,
                       horizon=a.horizon, max_advance=a.max_advance)
