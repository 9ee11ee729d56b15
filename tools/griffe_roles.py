"""A griffe extension for the API reference (mkdocs.yml): the docstrings' Sphinx-style roles
(``:func:`name```, ``:class:`~pkg.mod.Name```, ``:mod:``, ``:meth:``, ``:data:``, ``:attr:``,
``:exc:``) become mkdocstrings cross-references, resolved from the docstring's scope
(``scoped_crossrefs``). A role naming nothing that exists is a broken reference, and a strict
build (``mkdocs build --strict``, run by tests/test_docs_build.py) fails on it."""
from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|data|meth|attr|exc|obj):`(~?)([^`<>]+?)`")


def rewrite(text: str) -> str:
    """``:func:`a.b``` -> ``[`a.b`][a.b]``; ``:class:`~a.B``` -> ``[`B`][a.B]``; a call's ``()`` is
    kept in the text, not in the target."""
    def sub(m):
        target = m.group(2).strip()
        bare = target[:-2] if target.endswith("()") else target
        shown = target.rsplit(".", 1)[-1] if m.group(1) else target
        return f"[`{shown}`][{bare}]"

    return ROLE.sub(sub, text)


def _rewrite_docstring(obj):
    if obj.docstring is not None and ":" in obj.docstring.value:
        obj.docstring.value = rewrite(obj.docstring.value)  # idempotent: no role is left


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj, **kwargs):  # every object of the tree but its top module
        _rewrite_docstring(obj)

    def on_module(self, *, mod, **kwargs):  # every module, the top one included
        _rewrite_docstring(mod)
