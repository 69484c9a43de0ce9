"""``segeval samples``: the bundled sample data; ``samples path NAME`` prints one file's path."""

from __future__ import annotations

import argparse

from napari_segeval._errors import SegEvalError
from napari_segeval.cli._common import add_json_flag, emit, format_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "samples",
        help="the bundled sample data: names, files, where they are",
        description=(
            "The sample cases (CT, video, endoscopy, dermoscopy, a small MSD-style "
            "task) and their files. From a source checkout they are sample_data/; "
            "from an installed wheel they are generated once into the user cache "
            "($XDG_CACHE_HOME or ~/.cache, napari-segeval/); "
            "$NAPARI_SEGEVAL_SAMPLES names another folder."
        ),
    )
    add_json_flag(p)
    p.set_defaults(func=run_list)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    path = actions.add_parser(
        "path",
        help="the full path of one sample's file",
        description="Print the path of NAME's image (or --part labels).",
    )
    path.add_argument("name", metavar="NAME", help="a name of 'segeval samples'")
    path.add_argument(
        "--part",
        choices=("image", "labels"),
        default="image",
        help="which file (default: image; a folder sample is its folder)",
    )
    add_json_flag(path)
    path.set_defaults(func=run_path)


def run_list(args: argparse.Namespace) -> int:
    """Print every sample with its files."""
    from napari_segeval.phantoms.samples import FILE_PARTS, NEEDS_EXTRA, load_index, sample_root

    root = sample_root()
    index = load_index(root)
    rows = []
    for name in sorted(index):
        entry = index[name]
        if isinstance(entry, dict):
            files = {k: str(root / entry[k]) for k in FILE_PARTS if isinstance(entry.get(k), str)}
            rows.append({"name": name, "modality": entry.get("modality"), **files})
        else:
            rows.append({"name": name, "modality": None, "folder": str(root / entry)})
    missing = [
        {
            "name": n,
            "reason": f"{what} needs the optional package '{pkg}': "
            f"pip install 'napari-segeval[{extra}]'",
        }
        for n, (pkg, extra, what) in NEEDS_EXTRA.items()
        if n not in index
    ]

    def rel(row: dict, key: str) -> str:
        value = row.get(key)
        return "-" if value is None else str(value)[len(str(root)) + 1 :]

    table = format_table(
        ["name", "modality", "image (or folder)", "labels"],
        [
            [
                r["name"],
                r["modality"] or "-",
                rel(r, "image") if "image" in r else rel(r, "folder") + "/",
                rel(r, "labels"),
            ]
            for r in rows
        ],
    )
    lines = [f"samples in {root}", "", table]
    lines += [f"not here: {m['name']}: {m['reason']}" for m in missing]
    lines += ["", "segeval samples path NAME [--part labels] prints one file's full path."]
    return emit(
        args, {"root": str(root), "samples": rows, "unavailable": missing}, "\n".join(lines)
    )


def run_path(args: argparse.Namespace) -> int:
    """Print the path of one sample's file."""
    from napari_segeval.phantoms.samples import sample_path

    try:
        path = sample_path(args.name, args.part)
    except KeyError as exc:
        raise SegEvalError(str(exc.args[0])) from exc
    return emit(args, {"name": args.name, "part": args.part, "path": str(path)}, str(path))
