"""The prompts file: a case's prompt sets as JSON, so a session can be replayed exactly.

``format: napari-segeval/prompts/1`` records the frame-stack shape ``(n, H, W)``, each
structure's id and name, and its prompts in order; masks are run-length encoded.
Reading checks every value, so a malformed file fails with one line naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidPromptError, ReadError
from napari_segeval.prompts.box import Box
from napari_segeval.prompts.prompt_set import MaskPrompt, Point, Prompt, PromptSet

FORMAT = "napari-segeval/prompts/1"


def encode_mask(mask: np.ndarray) -> dict:
    """Run-length encoding of a 2D boolean mask (C order, first run is background)."""
    flat = np.asarray(mask, dtype=bool).ravel()
    change = np.flatnonzero(np.diff(flat.astype(np.int8))) + 1
    counts = np.diff(np.concatenate([[0], change, [flat.size]])).tolist()
    if flat.size and flat[0]:
        counts = [0, *counts]
    return {"size": [int(s) for s in mask.shape], "counts": [int(c) for c in counts]}


def decode_mask(rle: Mapping[str, Any]) -> np.ndarray:
    """Inverse of :func:`encode_mask`; ``ValueError`` when the runs do not fill the size."""
    size = [int(s) for s in rle["size"]]
    counts = np.asarray([int(c) for c in rle["counts"]], dtype=np.int64)
    if len(size) != 2 or min(size) < 1 or (counts < 0).any():
        raise ValueError("bad mask size or negative run")
    if int(counts.sum()) != size[0] * size[1]:
        raise ValueError(f"runs cover {int(counts.sum())} pixels, the mask has {size[0] * size[1]}")
    values = np.arange(counts.size) % 2 == 1
    return np.repeat(values, counts).reshape(size)


def prompt_to_dict(p: Prompt) -> dict:
    """JSON-ready form of one prompt (``type`` box, point or mask)."""
    if isinstance(p, Box):
        return {"type": "box", "index": p.index, "y0": p.y0, "x0": p.x0, "y1": p.y1, "x1": p.x1}
    if isinstance(p, Point):
        return {"type": "point", "index": p.index, "y": p.y, "x": p.x, "positive": p.positive}
    return {"type": "mask", "index": p.index, "rle": encode_mask(p.mask)}


def prompt_from_dict(d: Mapping[str, Any], label: int) -> Prompt:
    """Inverse of :func:`prompt_to_dict` (``ValueError``/``KeyError``/``TypeError`` if malformed)."""
    kind = d["type"]
    index = _integer(d["index"], "index")
    if kind == "box":
        y0, x0, y1, x1 = (_integer(d[k], k) for k in ("y0", "x0", "y1", "x1"))
        return Box(y0, x0, y1, x1, index=index, label=label)
    if kind == "point":
        positive = d.get("positive", True)
        if not isinstance(positive, bool):
            raise ValueError(f"'positive' must be true or false, got {positive!r}")
        return Point(
            _number(d["y"], "y"), _number(d["x"], "x"), index=index, label=label, positive=positive
        )
    if kind == "mask":
        return MaskPrompt(decode_mask(d["rle"]), index=index, label=label)
    raise ValueError(f"unknown prompt type {kind!r} (box, point or mask)")


def _integer(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
        raise ValueError(f"{what} must be an integer, got {v!r}")
    return int(v)


def _objects(v: Any, what: str) -> list:
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise ValueError(f"{what} must be a list of objects, got {v!r}"[:200])
    return v


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{what} must be a number, got {v!r}")
    return float(v)


@dataclass
class PromptFile:
    """The prompt sets of one case with the frame-stack shape and structure names.

    Parameters
    ----------
    sets
        By structure id, in the order the structures were prompted.
    shape
        ``(n, H, W)`` of the frame stack the prompts are for (``(1, H, W)``: a 2D image).
    names
        Structure names (optional per id).
    """

    sets: dict[int, PromptSet]
    shape: tuple[int, ...] | None = None
    names: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        """The JSON object (``format``, ``shape``, ``structures`` with their prompts)."""
        return {
            "format": FORMAT,
            "shape": None if self.shape is None else [int(s) for s in self.shape],
            "structures": [
                {
                    "label": lab,
                    "name": self.names.get(lab),
                    "prompts": [prompt_to_dict(p) for p in s.prompts],
                }
                for lab, s in self.sets.items()
            ],
        }

    @classmethod
    def from_json(cls, obj: Any, source: str = "prompts") -> PromptFile:
        """Parse and check a JSON object; :class:`InvalidPromptError` names what is wrong."""
        if not isinstance(obj, dict) or obj.get("format") != FORMAT:
            raise InvalidPromptError(f"{source}: not a prompts file (no format {FORMAT!r})")
        shape = obj.get("shape")
        try:
            shape = None if shape is None else tuple(_integer(s, "shape") for s in shape)
            if shape is not None and (len(shape) != 3 or min(shape) < 1):
                raise ValueError(f"shape must be [n, H, W] of positive sizes, got {list(shape)}")
            sets: dict[int, PromptSet] = {}
            names: dict[int, str] = {}
            for s in _objects(obj["structures"], "structures"):
                label = _integer(s["label"], "label")
                if label in sets:
                    raise ValueError(f"structure {label} is listed twice")
                prompts = [
                    prompt_from_dict(d, label)
                    for d in _objects(s["prompts"], f"prompts of structure {label}")
                ]
                sets[label] = PromptSet(label, tuple(prompts))
                if s.get("name") is not None:
                    names[label] = str(s["name"])
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InvalidPromptError(f"{source}: malformed prompts file: {what}") from None
        return cls(sets, shape, names)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PromptFile):
            return NotImplemented
        return (
            self.shape == other.shape
            and self.names == other.names
            and list(self.sets.items()) == list(other.sets.items())
        )

    def check(
        self,
        shape: Sequence[int],
        structures: Mapping[int, str] | None = None,
        present: Iterable[int] | None = None,
        *,
        where: str = "slice",
        source: str | None = None,
    ) -> None:
        """Refuse prompts for another image (``shape``) or structures the case lacks, then validate."""
        src = source or "prompts"
        shape = tuple(int(s) for s in shape[:3])
        if self.shape is not None and tuple(self.shape) != shape:
            raise InvalidPromptError(
                f"{src}: the prompts are for an image of shape {list(self.shape)}, "
                f"this one is {list(shape)}"
            )
        structures = dict(structures or {})
        known = set(structures) | set(present or ())
        for lab, s in self.sets.items():
            name = self.names.get(lab)
            if name and structures.get(lab) and structures[lab] != name:
                raise InvalidPromptError(
                    f"{src}: structure {lab} is {name!r} in the prompts file but "
                    f"{structures[lab]!r} in the case"
                )
            if known and lab not in known:
                raise InvalidPromptError(
                    f"{src}: unknown structure {lab}"
                    + (f" ({name})" if name else "")
                    + f": the case has {', '.join(str(k) for k in sorted(known))}"
                )
            s.validate(shape, name=name or structures.get(lab), where=where, source=src)


def read_prompts(path: str | Path) -> PromptFile:
    """Read a prompts file written by :func:`write_prompts` (or by hand).

    Raises
    ------
    napari_segeval.ReadError
        The file is missing or not JSON.
    napari_segeval.InvalidPromptError
        It is JSON but not a valid prompts file.
    """
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReadError(f"{path}: no such prompts file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReadError(f"{path}: not a JSON prompts file ({exc})") from None
    return PromptFile.from_json(obj, source=str(path))


def write_prompts(path: str | Path, prompts: PromptFile, *, overwrite: bool = False) -> Path:
    """Write ``prompts`` as JSON, atomically, never over an existing file unless asked."""
    from napari_segeval._atomic import atomic_write_text

    text = json.dumps(prompts.to_json(), indent=1) + "\n"
    return atomic_write_text(path, text, overwrite=overwrite)
