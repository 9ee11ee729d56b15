"""Policies as values (docs/architecture.md): :class:`PolicyValue`, the frozen dataclass each library
constructor returns (its fields are the hyper-parameters; equal and hashed by value), made by
:func:`policy_value` from the constructor; :func:`is_policy`, which accepts it or a user's
:class:`~jaxbandits.core.types.Policy` NamedTuple; and :func:`policy_digest`, what names a policy in
checkpoints and split sweeps; :func:`constructor`, which makes the values a public constructor of
worlds, channels, delay laws or profiles returns carry the :class:`Made` record of the call
(:func:`made_by`; what experiment files are written from).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import Any, Callable, ClassVar, Optional, Tuple

import jax.numpy as jnp
import numpy as np

from ..moved import stable_module
from .types import Policy

__all__ = ["PolicyValue", "policy_value", "is_policy", "policy_digest", "user_policy_id", "ById", "constructor",
           "made_by", "Made", "FieldGrid"]


class PolicyValue:
    """A library policy as a value: a frozen dataclass whose fields are its hyper-parameters.

    It provides the interface of :class:`~jaxbandits.core.types.Policy` (``init``, ``act``, ``update``, ``payload``,
    ``needs``, ``name``, ``max_hold``, ...), so the engine runs it exactly as a user's ``Policy``
    NamedTuple. Equality and hash are by value (the type and every field; arrays by their bytes),
    so two equal policies share one compiled program; ``repr`` names the policy and the fields that
    differ from their defaults (``UCB1(alpha=0.5)``). Subclasses are made with
    :func:`policy_value`; their pure functions come from the constructor the class is made from,
    called once with the fields when the value is created (which also checks the fields).
    """

    _build_fn: ClassVar[Callable[..., Any]]
    _renamed: ClassVar[Tuple[Tuple[str, str], ...]] = ()  # (field, constructor argument)
    #: ``(kind, field names)`` of the fused kernel that implements this policy, else ``None``
    #: (read by ``jaxbandits.engine.fused.spec_of``)
    fused: ClassVar[Optional[Tuple[str, Tuple[str, ...]]]] = None
    #: the public constructor that makes values of this class (set by :func:`policy_value`; an
    #: experiment file names it as its ``kind``)
    constructor_fn: ClassVar[Callable[..., Any]]

    def __post_init__(self):
        kw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for field, arg in self._renamed:
            kw[arg] = kw.pop(field)
        impl = type(self)._build_fn(**kw)
        if isinstance(impl, PolicyValue):  # a constructor made from another (skipper_dew: a Skipper)
            impl = impl._impl
        object.__setattr__(self, "_impl", impl)
        # the hash, once (the compile cache hashes its keys at every lookup)
        object.__setattr__(self, "_hash", hash((type(self).__name__, value_key(self.values()))))

    def as_tuple(self) -> Policy:
        """The :class:`~jaxbandits.core.types.Policy` NamedTuple of this value's pure functions."""
        return self._impl

    @classmethod
    def field_arguments(cls) -> Tuple[str, ...]:
        """The constructor's argument of each field, in order (the field ``label`` is ``name``)."""
        ren = dict(cls._renamed)
        return tuple(ren.get(f.name, f.name) for f in dataclasses.fields(cls))

    def _replace(self, **functions) -> Policy:
        """A :class:`~jaxbandits.core.types.Policy` NamedTuple with some of this value's functions or declarations
        replaced (a user's policy derived from a library one, e.g. to record more state)."""
        return self._impl._replace(**functions)

    def values(self) -> Tuple[Tuple[str, Any], ...]:
        """``(field, value)`` pairs, in declaration order."""
        return tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self))

    def arguments(self) -> dict:
        """The constructor's arguments that make this value: the constructor called with them
        makes an equal value (the field ``label`` is the argument ``name``)."""
        ren = dict(self._renamed)
        return {ren.get(k, k): v for k, v in self.values()}

    def __eq__(self, other):
        if other is self:
            return True
        if type(other) is not type(self):
            return NotImplemented
        return value_key(self.values()) == value_key(other.values())

    def __hash__(self):
        return self._hash

    def __repr__(self):
        shown = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.default is not dataclasses.MISSING and _same(v, f.default):
                continue
            shown.append(f"{f.name}={_show(v)}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def digest(self) -> str:
        """A digest of the value, stable across processes and Python versions (names the units of
        split sweeps and checkpoints): the type and the fields, never code or addresses."""
        return hashlib.sha256(repr(_stable(self)).encode()).hexdigest()[:16]

    def __getstate__(self):
        return dict(self.values())

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self.__post_init__()


def _forward(field):
    return property(lambda self: getattr(self._impl, field),
                    doc=f"The ``{field}`` of the :class:`~jaxbandits.core.types.Policy` interface.")


for _f in Policy._fields:
    setattr(PolicyValue, _f, _forward(_f))
del _f


def policy_value(cls_name: str, fused: Optional[Tuple[str, Tuple[str, ...]]] = None,
                 renamed: Tuple[Tuple[str, str], ...] = (("label", "name"),)):
    """Make the constructor ``fn(**params) -> Policy`` return a :class:`PolicyValue`.

    The decorated constructor keeps its signature and checks; its parameters become the fields of a
    new frozen dataclass ``cls_name`` (a parameter ``name``, the display name, becomes the field
    ``label``: ``name`` is the interface's display name). The class is
    ``constructor.value_type`` (``classic.ucb1.value_type`` is ``UCB1``). Two calls with equal
    arguments make equal values, which share one compiled program.

    Args:
        cls_name: the name of the value's class, what its ``repr`` shows (``"UCB1"``).
        fused: ``(kernel kind, field names)`` of the fused kernel that implements the policy, or
            ``None`` (the default) when the fused path does not cover it (a policy of one's own).
        renamed: ``(field, constructor argument)`` pairs where the two names differ (by default
            the argument ``name`` is the field ``label``).

    Returns:
        A decorator: given the constructor ``fn`` (its arguments the hyper-parameters, returning a
        :class:`~jaxbandits.core.types.Policy` or a :class:`PolicyValue`), a function of the same
        signature that returns a value of the new class.

    Example:
        >>> from jaxbandits.policies import classic
        >>> @policy_value("Cautious")
        ... def cautious(alpha: float = 4.0):
        ...     return classic.ucb1(alpha=alpha).as_tuple()
        >>> cautious(), cautious(alpha=8.0)
        (Cautious(), Cautious(alpha=8.0))
        >>> cautious() == cautious(), cautious.value_type.__name__
        (True, 'Cautious')
    """

    def wrap(fn):
        import inspect

        sig = inspect.signature(fn)
        ren = {arg: field for field, arg in renamed if arg in sig.parameters}
        fields = []
        for p in sig.parameters.values():
            spec = (ren.get(p.name, p.name), p.annotation if p.annotation is not p.empty else Any)
            fields.append(spec if p.default is p.empty else spec + (dataclasses.field(default=p.default),))
        cls = dataclasses.make_dataclass(cls_name, fields, bases=(PolicyValue,), frozen=True, eq=False, repr=False,
                                         namespace={"_build_fn": staticmethod(fn),
                                                    "_renamed": tuple((f, a) for a, f in ren.items()),
                                                    "fused": fused,
                                                    "__doc__": f"{cls_name}: the value made by "
                                                               f":func:`{fn.__module__}.{fn.__name__}`."})
        cls.__module__ = fn.__module__
        cls.__qualname__ = f"{fn.__qualname__}.value_type"  # where pickle finds it

        @functools.wraps(fn)
        def make(*args, **kwargs):
            try:
                b = sig.bind(*args, **kwargs)
            except TypeError as e:  # as Python says it of a plain call: "ucb1() got an unexpected ..."
                raise TypeError(f"{fn.__name__}() {e}") from None
            return cls(**{ren.get(k, k): v for k, v in b.arguments.items()})

        make.value_type = cls
        cls.constructor_fn = staticmethod(make)  # declared: the public function that makes this class's values
        return make

    return wrap


class Made:
    """How a value was made: ``fn``, the public constructor (as its module exports it), and
    ``arguments``, the arguments it was called with (defaults filled in), by name. What
    :func:`~jaxbandits.experiments.files.writing.describe` writes as ``{kind = ..., arguments}``.
    Not pickled (a value read back from a pickle says nothing of how it was made)."""

    __slots__ = ("fn", "arguments")

    def __init__(self, fn, arguments):
        self.fn, self.arguments = fn, arguments

    def __reduce__(self):
        return (_unmade, ())

    def __repr__(self):
        return f"Made({getattr(self.fn, '__qualname__', self.fn)!r}, {self.arguments!r})"


def _unmade():
    return None


class MadeArray(np.ndarray):
    """A numpy array returned by a :func:`constructor` (``envs.synthetic_labels``): the same array,
    able to carry its :class:`Made` record (arrays computed from it do not carry it)."""


def constructor(fn):
    """Declare ``fn`` a public constructor of worlds, channels, delay laws, profiles or arrays of
    their parameters: each value it returns carries a :class:`Made` record (``fn`` and the bound
    arguments), read by :func:`made_by`.

    The value's fields, equality, hash and pytree structure are untouched; a value derived from it
    (``dataclasses.replace``, ``jax.tree.map``, a pickle) carries none. A function of one's own
    decorated with it is written to experiment files as ``package.module:function``. The innermost
    constructor's record is overwritten by the outermost (``envs.conversions`` calling
    ``envs.bernoulli`` is ``envs.conversions``). A return value that cannot carry the record (a
    tuple, a number) is returned as it is.

    Args:
        fn: the constructor, a function of its parameters returning the value (a numpy array is
            returned as a :class:`MadeArray` view of it).

    Returns:
        A function of the same signature returning the same value, with its :class:`Made` record.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class Gap:
        ...     width: float
        >>> @constructor
        ... def gap(width: float = 1.0) -> Gap:
        ...     return Gap(width)
        >>> made_by(gap(2.0)).arguments
        {'width': 2.0}
        >>> gap(2.0) == Gap(2.0), made_by(Gap(2.0)) is None
        (True, True)
    """
    import inspect

    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def make(*args, **kwargs):
        out = fn(*args, **kwargs)
        b = sig.bind(*args, **kwargs)
        b.apply_defaults()
        made = Made(make, {k: v for k, v in b.arguments.items()
                           if sig.parameters[k].kind in (sig.parameters[k].POSITIONAL_OR_KEYWORD,
                                                         sig.parameters[k].KEYWORD_ONLY)})
        if type(out) is np.ndarray:
            out = out.view(MadeArray)
        try:
            object.__setattr__(out, "_made", made)
        except (AttributeError, TypeError):  # a tuple, a number: it cannot carry the record
            pass
        return out

    make.constructor = True
    return make


def made_by(x) -> Optional[Made]:
    """The :class:`Made` record of a value returned by a :func:`constructor`, else ``None``.

    Args:
        x: any value.

    Returns:
        Its :class:`Made` record (``fn``, the constructor, and ``arguments``, by name with the
        defaults filled in), or ``None`` when no constructor made it (or it was derived from one's
        value: ``dataclasses.replace``, ``jax.tree.map``, a pickle).

    Example:
        >>> import dataclasses
        >>> from jaxbandits import delays
        >>> law = delays.geometric(mean=5.0)
        >>> made_by(law)
        Made('geometric', {'rho': None, 'mean': 5.0})
        >>> made_by(dataclasses.replace(law)) is None, made_by(3) is None
        (True, True)
    """
    try:
        m = vars(x).get("_made")
    except TypeError:  # no __dict__ (a tuple, a number): nothing recorded
        return None
    return m if isinstance(m, Made) else None


class FieldGrid:
    """``build(**fields) -> (world, policy with those fields replaced)``: the build of
    :func:`jaxbandits.simulate_grid` given ``(world, policy value)`` and a grid over the policy's
    fields. Equal and hashed by the world, the policy and the field names (a fresh equal grid reuses
    the compiled program)."""

    __slots__ = ("world", "policy", "names")

    def __init__(self, world, policy, names):
        if not isinstance(policy, PolicyValue):
            raise TypeError(f"a grid over a policy's fields needs a policy value (a library constructor's, or "
                            f"one made with jaxbandits.core.values.policy_value), got {type(policy).__name__}")
        fields = [f.name for f in dataclasses.fields(policy)]
        unknown = [n for n in names if n not in fields]
        if unknown:
            raise ValueError(f"grid keys must be fields of {type(policy).__name__} ({', '.join(fields)}), "
                             f"got {', '.join(map(repr, unknown))}")
        self.world, self.policy, self.names = world, policy, tuple(names)

    def __call__(self, **fields):
        return self.world, dataclasses.replace(self.policy, **fields)

    def _key(self):
        try:
            hash(self.world)
            w = self.world
        except TypeError:
            w = ById(self.world)
        return (w, self.policy, self.names)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, FieldGrid) and self._key() == other._key()


def is_policy(x) -> bool:
    """Whether ``x`` is a policy: a :class:`~jaxbandits.core.types.Policy` NamedTuple (a user's own) or
    a library :class:`PolicyValue`.

    Args:
        x: any value.

    Returns:
        bool: ``True`` for a ``Policy`` NamedTuple or a :class:`PolicyValue`, ``False`` otherwise.

    Example:
        >>> from jaxbandits.policies import classic
        >>> is_policy(classic.ucb1()), is_policy(classic.ucb1().as_tuple()), is_policy("ucb1")
        (True, True, False)
    """
    return isinstance(x, (Policy, PolicyValue))


class ById:
    """A value hashed and compared by identity (a traced or unhashable field; the engine's cache key
    of a world or a user's policy)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, ById) and other.obj is self.obj


def value_key(v):
    """A hashable stand-in of ``v`` equal for equal values: scalars with their type, arrays by
    dtype, shape and bytes, containers and dataclasses field by field; a traced or otherwise
    unhashable value by identity."""
    import jax

    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return (type(v).__name__, v)
    if isinstance(v, jax.core.Tracer):
        return ById(v)
    if isinstance(v, (np.ndarray, np.generic, jax.Array)):
        if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jax.dtypes.prng_key):
            v = jax.random.key_data(v)
        a = np.asarray(v)
        return ("array", a.dtype.str, a.shape, a.tobytes())
    if isinstance(v, PolicyValue):
        return (type(v), value_key(v.values()))
    if isinstance(v, (tuple, list)) and not hasattr(v, "_fields"):
        return (type(v).__name__,) + tuple(value_key(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple(sorted(((repr(k), value_key(x)) for k, x in v.items()), key=lambda kv: kv[0]))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v), tuple((f.name, value_key(getattr(v, f.name))) for f in dataclasses.fields(v)))
    try:
        hash(v)
        return v  # a function, a NamedTuple of functions (a user's Policy), ...: by its own equality
    except TypeError:
        return ById(v)


def _same(a, b) -> bool:
    try:
        return value_key(a) == value_key(b)
    except Exception:  # noqa: BLE001 - a value that cannot be compared is shown
        return False


def _show(v) -> str:
    """``repr`` of a field value, arrays as short lists."""
    import jax

    if isinstance(v, (np.ndarray, jax.Array)) and not isinstance(v, jax.core.Tracer):
        a = np.asarray(v)
        return repr(a.item()) if a.ndim == 0 and a.size == 1 else f"array({np.array2string(a, threshold=8)})"
    if callable(v) and hasattr(v, "__qualname__") and not isinstance(v, (type, PolicyValue)):
        return v.__qualname__
    if dataclasses.is_dataclass(v) and not isinstance(v, (type, PolicyValue)):  # a delay law, a block size
        return f"{type(v).__name__}({', '.join(f'{f.name}={_show(getattr(v, f.name))}' for f in dataclasses.fields(v))})"
    return repr(v)


def _stable(v):
    """A nested form of ``v`` whose ``repr`` is the same in every process (no addresses): functions
    by module and qualified name, arrays by a hash of their bytes. A module is named by its path
    before the layer folders (``jaxbandits.core.delays`` as ``jaxbandits.delays``:
    :func:`jaxbandits.moved.stable_module`, the table of moved modules reversed), so that digests
    written before the move still match."""
    import jax

    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return (type(v).__name__, v)
    if isinstance(v, (np.ndarray, np.generic, jax.Array)) and not isinstance(v, jax.core.Tracer):
        f = value_key(v)
        return ("array", f[1], f[2], hashlib.sha256(f[3]).hexdigest())
    if isinstance(v, PolicyValue):
        return (stable_module(type(v).__module__), type(v).__qualname__, tuple((k, _stable(x)) for k, x in v.values()))
    if isinstance(v, Policy):  # a user's policy held by a library wrapper: its name and functions
        return ("Policy", user_policy_id(v))
    if isinstance(v, (tuple, list)):
        return (type(v).__qualname__,) + tuple(_stable(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple(sorted((repr(k), _stable(x)) for k, x in v.items()))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (stable_module(type(v).__module__), type(v).__qualname__,
                tuple((f.name, _stable(getattr(v, f.name))) for f in dataclasses.fields(v)))
    if callable(v) and hasattr(v, "__qualname__"):
        return ("callable", stable_module(getattr(v, "__module__", "")), v.__qualname__)
    return ("object", stable_module(type(v).__module__), type(v).__qualname__)


#: declarations of :class:`~jaxbandits.core.types.Policy` that change no result and are left out of
#: :func:`user_policy_id`, so the ids written before they were declared still match:
#: ``honours_mask`` (a refusal before compiling, never a different run)
_NOT_IN_ID = ("honours_mask",)


def user_policy_id(policy) -> str:
    """What names a user's :class:`~jaxbandits.core.types.Policy` NamedTuple in checkpoints and split
    sweeps: its ``name`` and its functions' qualified names (``module:qualname``), with its
    declarations (``needs``, ``max_hold``, ...; not ``honours_mask``, which changes no result).
    Nothing is read from code or closures, so the parameters a closure holds are *not* seen: give
    each differently parameterised policy its own ``name`` (``name=f"mine(alpha={alpha})"``), or
    write it as a value
    (:func:`policy_value`), whose fields name it (docs/composing.md).

    Args:
        policy: a user's :class:`~jaxbandits.core.types.Policy` NamedTuple.

    Returns:
        str: ``"u:"`` and 16 hex digits, the same in every process for the same name, functions
        and declarations.

    Example:
        >>> from jaxbandits.policies import classic
        >>> mine = classic.ucb1().as_tuple()._replace(name="mine(alpha=2)")
        >>> u = user_policy_id(mine)
        >>> u.startswith("u:"), len(u), user_policy_id(mine._replace(name="other")) == u
        (True, 18, False)
    """
    parts = []
    for field, v in zip(policy._fields, policy):
        if field in _NOT_IN_ID:
            continue
        if callable(v):
            v = f"{stable_module(getattr(v, '__module__', ''))}:{getattr(v, '__qualname__', type(v).__qualname__)}"
        parts.append((field, v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)))
    return "u:" + hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:16]


def policy_digest(policy) -> str:
    """What identifies a policy in checkpoints and split sweeps, the same in every process: a
    library :class:`PolicyValue` by its type and fields (``v:`` and :meth:`PolicyValue.digest`), a
    user's :class:`~jaxbandits.core.types.Policy` NamedTuple by its name and functions' names
    (:func:`user_policy_id`: closures are not read).

    Args:
        policy: a library :class:`PolicyValue` (what the constructors in
            :mod:`jaxbandits.policies` return) or a user's :class:`~jaxbandits.core.types.Policy`
            NamedTuple.

    Returns:
        str: ``"v:"`` and 16 hex digits for a library value (equal for equal types and fields),
        ``"u:"`` and 16 hex digits for a user's NamedTuple.

    Example:
        >>> from jaxbandits.policies import classic
        >>> d = policy_digest(classic.ucb1())
        >>> d.startswith("v:"), len(d)
        (True, 18)
        >>> policy_digest(classic.ucb1()) == d, policy_digest(classic.ucb1(alpha=1.0)) == d
        (True, False)
    """
    if isinstance(policy, PolicyValue):
        return "v:" + policy.digest()
    return user_policy_id(policy)
