"""``segeval models``: ``list`` the models known by name, ``pull NAME`` once (SHA-256
checked; the only download; offline, it says which file to fetch), ``path NAME``."""

from __future__ import annotations

import argparse
from typing import Any

from napari_segeval.cli._common import add_flag, add_json_flag, emit, format_table

_NETWORK_NOTE = (
    "Any name above works as --model NAME; --model medsam2 uses MedSAM2_latest "
    "and --model sam2.1-SIZE the checkpoint of that name."
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "models",
        help="models by name: list them, pull one (downloaded once, checked), path",
        description=(
            "The catalogue of real checkpoints (MedSAM2's published ones, Meta's SAM2.1 in "
            "four sizes) and the built-in models. 'pull' downloads a checkpoint once through "
            "huggingface_hub into its cache (HF_HOME / HF_HUB_CACHE; HF_ENDPOINT for a "
            "mirror; HF_HUB_OFFLINE=1 for none), checks its SHA-256 against the one the hub "
            "publishes, and then --model NAME uses it. Nothing else downloads."
        ),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(func=lambda _args: p.print_help() or 0)  # no action: the help
    listing = actions.add_parser(
        "list",
        help="every model: kind, size, licence, source, here",
        description="Every model by name; --json adds the model cards.",
    )
    add_json_flag(listing)
    listing.set_defaults(func=run_list)
    pull = actions.add_parser(
        "pull",
        help="download a checkpoint once and check its SHA-256",
        description="Download NAME into the hub's cache (resumed when the "
        "connection drops; Ctrl-C leaves nothing behind), "
        "check it, print where it is.",
    )
    pull.add_argument("name", metavar="NAME", help="a name of 'segeval models list'")
    add_flag(pull, "--no-progress", "no progress bar")
    add_json_flag(pull)
    pull.set_defaults(func=run_pull)
    path = actions.add_parser(
        "path",
        help="the local file of a model",
        description="Print the file of NAME (a pulled checkpoint or a "
        "shipped weight file); fails when it is not here.",
    )
    path.add_argument("name", metavar="NAME")
    add_json_flag(path)
    path.set_defaults(func=run_path)


def _json_row(row: Any) -> dict:
    """A row of :func:`napari_segeval.models.records.model_rows` as ``--json`` has it."""
    from napari_segeval.models.catalogue import url
    from napari_segeval.models.hub import endpoint
    from napari_segeval.models.records import Weights

    r, entry, packaged = row.record, row.record.entry, row.record.packaged
    config = input_px = repo_id = link = None
    if entry is not None:
        from napari_segeval.models.medsam2._build import ARCHITECTURES

        arch = ARCHITECTURES.get(r.network)
        config, input_px = (arch.config, arch.image_size) if arch else (None, None)
        source, filename = entry.source, entry.filename
        repo_id, link = entry.repo_id, url(entry, endpoint())
    elif packaged is not None:
        from napari_segeval.models.litemedsam.model import LiteMedSAMModel

        input_px = LiteMedSAMModel.image_size
        source = f"pip: {packaged.distribution}=={packaged.version}"
        filename = packaged.path.rsplit("/", 1)[-1]
    else:
        source = "shipped with napari-segeval"
        filename = r.shipped_file.name if r.shipped_file is not None else None
    return {
        "name": r.name,
        "kind": r.family,
        "network": r.network,
        "config": config,
        "input_px": input_px,
        "size_bytes": r.size or 0,
        "licence": r.licence,
        "source": source,
        "repo_id": repo_id,
        "filename": filename,
        "revision": r.revision,
        "sha256": r.sha256,
        "url": link,
        "here": row.here,
        "path": str(row.path) if row.path else None,
        "card": r.card.as_dict(),
        "shipped": r.weights in (Weights.SHIPPED, Weights.NONE),
        "install": row.install,
    }


def run_list(args: argparse.Namespace) -> int:
    """Print every model (table), or one JSON object with their cards."""
    from napari_segeval.models.catalogue import size_text
    from napari_segeval.models.hub import cache_dir, endpoint
    from napari_segeval.models.records import model_rows

    # the catalogue, the packaged weights, then the built-in models (with cards)
    rows = [_json_row(row) for row in model_rows() if row.listed]
    table = format_table(
        ["name", "kind", "network", "size", "licence", "source", "here"],
        [
            [
                r["name"],
                r["kind"],
                r["network"],
                size_text(r["size_bytes"]) if r["size_bytes"] else "-",
                r["licence"].split(" (")[0],
                f"{r['repo_id']}@{r['revision'][:7]}" if r["repo_id"] else r["source"],
                "shipped" if r["shipped"] else "yes" if r["here"] else "-",
            ]
            for r in rows
        ],
    )
    missing = [f"{r['name']} is not installed: {r['install']}" for r in rows if r.get("install")]
    text = "\n".join([table, "", *missing, f"cache: {cache_dir()}", _NETWORK_NOTE])
    return emit(args, {"cache": str(cache_dir()), "endpoint": endpoint(), "models": rows}, text)


def run_pull(args: argparse.Namespace) -> int:
    """Download (or find) a catalogue checkpoint, check it, print where it is."""
    from napari_segeval.cli._progress import progress_bar
    from napari_segeval.models.catalogue import get, size_text
    from napari_segeval.models.hub import pull
    from napari_segeval.models.records import networks_using

    entry = get(args.name)
    show = not (args.json or args.no_progress)
    with progress_bar(entry.name, "B", enabled=show, unit_scale=True) as progress:
        result = pull(entry.name, progress=progress)
    how = ("downloaded" if result["downloaded"] else "already here") + (
        " (replaced a copy that failed its check)" if result["replaced"] else ""
    )
    use = " or ".join(f"--model {n}" for n in [*networks_using(entry.name), entry.name])
    text = (
        f"{entry.name}: {how}, SHA-256 checked ({result['sha256'][:12]}..., "
        f"{size_text(result['size'])}, {entry.repo_id}@{entry.revision[:7]})\n"
        f"{result['path']}\nuse it with {use}"
    )
    return emit(args, result, text)


def run_path(args: argparse.Namespace) -> int:
    """Print the local file of a pulled checkpoint or a shipped weight file."""
    from napari_segeval.models.catalogue import find
    from napari_segeval.models.records import model_file

    here = model_file(args.name)
    entry = find(args.name)
    return emit(args, {"name": entry.name if entry else args.name, "path": str(here)}, str(here))
