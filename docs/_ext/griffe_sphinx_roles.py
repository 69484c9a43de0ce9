"""A griffe extension for the API reference: the package's Sphinx conventions, for mkdocstrings.

The docstrings are numpydoc and follow Sphinx's conventions, which mkdocstrings (Markdown)
does not read. When griffe has loaded ``napari_segeval``, :class:`SphinxRoles`:

1. gives each attribute documented by ``#:`` comment lines above it (Sphinx's attribute
   docstring, :func:`sphinx_comment`) that text as its docstring;
2. rewrites each cross-reference role (``:func:`~napari_segeval.io.read_case```,
   ``:class:`Box```, ``:mod:`.shapes```) into an autorefs reference, resolving the name
   as Sphinx does: the current class, then the current module and its parent packages,
   then the full path (a leading ``.`` also matches a unique object whose path ends with
   the name).

The names the root and ``napari_segeval.attacks`` load on first use are their
``__init__.pyi`` stubs' imports, which griffe reads itself: they are members where users
import them.

A role's name that resolves to an object of the package is an *optional* reference:
linked when the object is on an API page, plain code when it is not (a private module).
A name of another package (``numpy.ndarray``, ``torch.load``) is plain code. A name that
resolves to nothing is a *required* reference, so ``mkdocs build --strict`` fails on it
where the docstring is rendered: a stale name in a docstring is a broken link, not a silent
one.

``mkdocs.yml`` loads it (``extensions: [docs/_ext/griffe_sphinx_roles.py]``);
``tests/test_docs.py`` tests the converter and runs these examples.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable, Iterator

try:
    from griffe import AliasResolutionError, CyclicAliasError, Docstring, Extension
except ImportError:  # the converter is plain text; only mkdocs needs griffe
    Extension = Docstring = object  # type: ignore[assignment,misc]
    AliasResolutionError = CyclicAliasError = LookupError  # type: ignore[assignment,misc]

#: The package whose names are checked (a name of another package is left as code).
PACKAGE = "napari_segeval"
#: Packages the docstrings name that a docs-only environment may not have installed.
KNOWN_EXTERNAL = frozenset(
    {
        "numpy",
        "scipy",
        "torch",
        "napari",
        "tqdm",
        "pydicom",
        "nibabel",
        "SimpleITK",
        "dask",
        "matplotlib",
        "huggingface_hub",
        "sam2",
        "magicgui",
        "qtpy",
        "vispy",
        "monai",
        "nnunetv2",
        "av",
    }
)
#: A Sphinx cross-reference role of the Python domain.
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|data|attr|meth|exc|obj|const):`(?P<body>[^`]+)`")


def parse(body: str) -> tuple[str, str]:
    """``(title, target)`` of a role's text: ``title <target>``, ``~a.b`` (title ``b``) or ``a.b``.

    Examples
    --------
    >>> parse("~napari_segeval.io.read_case"), parse("Box"), parse("the key <keys.Key>")
    (('read_case', 'napari_segeval.io.read_case'), ('Box', 'Box'), ('the key', 'keys.Key'))
    """
    explicit = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", body)
    if explicit:
        return explicit[1].strip(), explicit[2].strip()
    target = body.strip()
    if target.startswith("~"):
        target = target[1:]
        return target.rstrip("()").rsplit(".", 1)[-1] + (
            "()" if target.endswith("()") else ""
        ), target
    return target, target


def is_external(top: str) -> bool:
    """Whether ``top`` is the top-level name of another package (stdlib or installed).

    Examples
    --------
    >>> is_external("numpy"), is_external("threading"), is_external("options")
    (True, True, False)
    """
    if top == PACKAGE or not top.isidentifier():
        return False
    return (
        top in sys.stdlib_module_names
        or top in KNOWN_EXTERNAL
        or importlib.util.find_spec(top) is not None
    )


def convert(text: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` with every role replaced by an autorefs reference.

    ``resolve(target)`` gives the full path of the object ``target`` names, or None.
    A name of this package that resolves to nothing stays a required reference (autorefs
    reports it); another package's name is plain code.

    Examples
    --------
    >>> paths = {"Box": "napari_segeval.prompts.Box"}
    >>> convert("a :class:`Box` and :func:`numpy.unique`", paths.get)
    'a <autoref identifier="napari_segeval.prompts.Box" optional>`Box`</autoref> and `numpy.unique`'
    >>> convert(":func:`~napari_segeval.gone`", paths.get)
    '<autoref identifier="napari_segeval.gone">`gone`</autoref>'
    """

    def one(match: re.Match) -> str:
        title, target = parse(match["body"])
        name = target.rstrip("()")
        path = resolve(name)
        if path is not None:
            return f'<autoref identifier="{path}" optional>`{title}`</autoref>'
        bare = name.lstrip(".")
        if not name.startswith(".") and is_external(bare.split(".", 1)[0]):
            return f"`{title}`"  # another package's object: no page of this site
        full = bare if bare.startswith(PACKAGE) else f"{PACKAGE}.{bare}"
        return f'<autoref identifier="{full}">`{title}`</autoref>'

    return ROLE.sub(one, text)


def _walk(obj) -> Iterator:
    """``obj`` and every object defined under it (aliases, that is imports, left out)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


def sphinx_comment(attr) -> str:
    """The ``#:`` comment lines just above an attribute (Sphinx's attribute docstring)."""
    path = attr.filepath
    lines = attr.lines_collection[path] if attr.lineno and path in attr.lines_collection else None
    found: list[str] = []
    index = attr.lineno - 2
    while lines and 0 <= index < len(lines) and lines[index].strip().startswith("#:"):
        found.insert(0, lines[index].strip()[2:].strip())
        index -= 1
    return "\n".join(found)


class SphinxRoles(Extension):
    """Give ``#:`` comments to their attributes, then rewrite every docstring's roles."""

    def on_package(self, *, pkg, loader, **kwargs) -> None:
        """griffe >= 1.14 (2.x): the package is loaded completely."""
        self._rewrite(pkg, loader)

    def on_package_loaded(self, *, pkg, loader, **kwargs) -> None:
        """older griffe: the same event under its older name."""
        self._rewrite(pkg, loader)

    def _rewrite(self, pkg, loader) -> None:
        if pkg.path != PACKAGE or getattr(self, "_done", False):
            return
        self._done = True
        objects = list(_walk(pkg))
        style = pkg.docstring  # the loader's parser (numpy) and its options
        for obj in objects:
            comment = sphinx_comment(obj) if obj.is_attribute and obj.docstring is None else ""
            if comment:
                obj.docstring = Docstring(
                    comment,
                    lineno=obj.lineno,
                    parent=obj,
                    parser=style.parser if style else None,
                    parser_options=style.parser_options if style else None,
                )
        collection = loader.modules_collection
        by_name: dict[str, list[str]] = {}
        for obj in objects:
            by_name.setdefault(obj.name, []).append(obj.path)

        def canonical(path: str) -> str | None:
            """The path where the object ``path`` names is defined; None: no such object."""
            try:
                found = collection[path]
            except (KeyError, AliasResolutionError, CyclicAliasError):
                return None
            try:
                return found.final_target.path if found.is_alias else found.path
            except (AliasResolutionError, CyclicAliasError):  # an import from elsewhere
                return path

        for obj in objects:
            if obj.docstring is None or ":`" not in obj.docstring.value:
                continue
            scopes = [o.path for o in (obj, *_parents(obj)) if not o.is_function]

            def resolve(target: str, scopes=scopes) -> str | None:
                bare = target.lstrip(".")
                if not bare:
                    return None
                for path in (*(f"{scope}.{bare}" for scope in scopes), bare):
                    found = canonical(path)
                    if found is not None:
                        return found
                if target.startswith("."):  # Sphinx: a unique object ending with the name
                    ending = [
                        p
                        for p in by_name.get(bare.rsplit(".", 1)[-1], ())
                        if p.endswith(f".{bare}")
                    ]
                    if len(ending) == 1:
                        return ending[0]
                return None

            obj.docstring.value = convert(obj.docstring.value, resolve)


def _parents(obj) -> Iterator:
    parent = obj.parent
    while parent is not None:
        yield parent
        parent = parent.parent
