"""Internal: not public API.

Frozen dataclasses registered as JAX pytrees: fields are data (``vmap``-able parameters)
unless declared with :func:`static` (sizes, kinds: part of the compiled program)."""
import dataclasses

import jax


def pytree(cls):
    """Make ``cls`` a frozen dataclass and register it as a pytree."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    data, meta = [], []
    for f in dataclasses.fields(cls):
        (meta if f.metadata.get("static") else data).append(f.name)
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


def static(default=dataclasses.MISSING):
    """A static (hashable, compile-time) dataclass field."""
    return dataclasses.field(default=default, metadata={"static": True})
