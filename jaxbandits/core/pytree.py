"""Internal: not public API.

Frozen dataclasses registered as JAX pytrees: fields are data (``vmap``-able parameters)
unless declared with :func:`static` (sizes, kinds: part of the compiled program). They are values:
``==`` and ``hash`` compare the type and every field (arrays by dtype, shape and bytes), so two
equal worlds or delay laws name one compiled program."""
import dataclasses

import jax


def _key(self):
    from .values import value_key

    return (type(self), tuple((f.name, value_key(getattr(self, f.name))) for f in dataclasses.fields(self)))


def _eq(self, other):
    if other is self:
        return True
    if type(other) is not type(self):
        return NotImplemented
    return _key(self) == _key(other)


def _hash(self):
    h = self.__dict__.get("_value_hash")
    if h is None:  # once per object (a world's table is read once): fields are frozen
        h = hash(_key(self))
        object.__setattr__(self, "_value_hash", h)
    return h


#: per-object caches kept out of pickles (a hash is of this process: types hash by address)
_TRANSIENT = ("_value_hash", "_made")


def _getstate(self):
    return {k: v for k, v in self.__dict__.items() if k not in _TRANSIENT}


def pytree(cls):
    """Make ``cls`` a frozen dataclass, equal and hashed by value, and register it as a pytree."""
    cls = dataclasses.dataclass(frozen=True, eq=False)(cls)
    if "__eq__" not in vars(cls):
        cls.__eq__ = _eq
    if "__hash__" not in vars(cls) or vars(cls)["__hash__"] is None:
        cls.__hash__ = _hash
    if "__getstate__" not in vars(cls):
        cls.__getstate__ = _getstate
    data, meta = [], []
    for f in dataclasses.fields(cls):
        (meta if f.metadata.get("static") else data).append(f.name)
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


def static(default=dataclasses.MISSING):
    """A static (hashable, compile-time) dataclass field."""
    return dataclasses.field(default=default, metadata={"static": True})
