"""Prompt sets: every prompt of one structure, on any slices/frames, in the order given.

A structure is prompted by a :class:`PromptSet`: boxes (:class:`~.box.Box`), positive
and negative points (:class:`Point`) and mask prompts (:class:`MaskPrompt`, a painted
slice) on any number of slices/frames. The set keeps the order in which the prompts
were given, because that order is the session: replaying it gives the same masks.

Semantics (SAM2's interactive video predictor, which every backend follows):

* Prompts are applied **one at a time, in the order given** (as a person clicks). A
  frame that carries prompts is a *conditioning frame*; propagation starts from the
  conditioning frames (volumes: forward from the first, backward from the last).
* On one frame, a **box replaces** that frame's earlier box and points (SAM2 accepts a
  box only as the first prompt of a frame), a **mask replaces** everything earlier on
  its frame, and **points add** to what the frame has (each refines the frame's
  current mask). :meth:`PromptSet.active` gives what still counts on a frame.
* A set needs at least one prompt that says where the structure *is*: a box, a
  positive point or a non-empty mask. Negative points alone are refused.

Coordinates are array indices of the slice/frame ``index`` (the first array axis; ``0``
for a 2D image): boxes inclusive-exclusive (see :mod:`.box`), points at pixel centres
(``(y, x) = (3, 4)`` is the centre of pixel row 3, column 4; floats allowed).

The JSON form (:class:`PromptFile`, ``format: napari-segeval/prompts/1``) records the
frame-stack shape ``(n, H, W)`` (a 2D image is ``(1, H, W)``), each structure's id and
name, and its prompts in order; masks are run-length encoded. Reading checks every
value, so a malformed file fails with one line naming it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from napari_segeval._errors import InvalidPromptError, ReadError
from napari_segeval.prompts.box import Box

FORMAT = "napari-segeval/prompts/1"


@dataclass(frozen=True)
class Point:
    """A click on one slice/frame: positive (the structure is here) or negative (it is not).

    Parameters
    ----------
    y, x : float
        Pixel-centre coordinates on slice/frame ``index`` (array indices).
    index : int
        Slice (volume) or frame (video) index; ``0`` for a 2D image.
    label : int
        Structure id (``>= 1``).
    positive : bool
        ``True`` for a positive (foreground) click, ``False`` for a negative one.

    Examples
    --------
    >>> p = Point(10, 20.25, index=3, positive=False)
    >>> p.pixel, p.sign
    ((10, 20), '-')
    >>> p.to_model_xy((100, 200), 512)
    (51.84, 51.2)
    """

    y: float
    x: float
    index: int = 0
    label: int = 1
    positive: bool = True

    def __post_init__(self) -> None:
        for name in ("y", "x"):
            v = float(getattr(self, name))
            if not math.isfinite(v):
                raise ValueError(f"point {name} must be finite, got {v}")
            object.__setattr__(self, name, v)
        object.__setattr__(self, "index", int(self.index))
        object.__setattr__(self, "label", int(self.label))
        object.__setattr__(self, "positive", bool(self.positive))

    @property
    def pixel(self) -> tuple[int, int]:
        """The pixel ``(row, column)`` the point lies in (nearest pixel centre)."""
        return math.floor(self.y + 0.5), math.floor(self.x + 0.5)

    @property
    def sign(self) -> str:
        """``"+"`` for a positive point, ``"-"`` for a negative one."""
        return "+" if self.positive else "-"

    def to_model_xy(self, shape: Sequence[int], size: int | Sequence[int]) -> tuple[float, float]:
        """``(x, y)`` in pixels of a model input resized to ``size`` (as SAM2 scales clicks)."""
        mh, mw = (size, size) if np.isscalar(size) else (size[0], size[1])
        return (self.x * float(mw) / float(shape[1]), self.y * float(mh) / float(shape[0]))

    def to_napari(self, ndim: int = 3) -> np.ndarray:
        """napari Points coordinates ``(index, y, x)`` (or ``(y, x)`` for ``ndim=2``)."""
        if ndim == 2:
            return np.array([self.y, self.x], dtype=float)
        lead = np.zeros(ndim - 2, dtype=float)
        lead[-1] = self.index
        return np.concatenate([lead, [self.y, self.x]])

    @classmethod
    def from_napari(cls, coords: Sequence[float], label: int = 1, positive: bool = True) -> Point:
        """A point from napari Points coordinates (last two are ``(y, x)``, the one before the index).

        Examples
        --------
        >>> Point.from_napari([4.0, 2.0, 3.0], label=2, positive=False)
        Point(y=2.0, x=3.0, index=4, label=2, positive=False)
        """
        c = [float(v) for v in coords]
        index = round(c[-3]) if len(c) >= 3 else 0
        return cls(c[-2], c[-1], index=index, label=label, positive=positive)


@dataclass(frozen=True, eq=False)
class MaskPrompt:
    """A mask prompt: the structure's mask on one slice/frame (a painted slice).

    Examples
    --------
    >>> m = np.zeros((4, 5), bool); m[1:3, 2] = True
    >>> mp = MaskPrompt(m, index=2)
    >>> mp.area, mp == MaskPrompt(m.copy(), index=2)
    (2, True)
    """

    mask: np.ndarray
    index: int = 0
    label: int = 1

    def __post_init__(self) -> None:
        m = np.array(self.mask, dtype=bool, copy=True)
        if m.ndim != 2:
            raise ValueError(f"a mask prompt is one (H, W) slice, got shape {m.shape}")
        m.setflags(write=False)
        object.__setattr__(self, "mask", m)
        object.__setattr__(self, "index", int(self.index))
        object.__setattr__(self, "label", int(self.label))

    @property
    def area(self) -> int:
        """Number of foreground pixels."""
        return int(self.mask.sum())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MaskPrompt):
            return NotImplemented
        return (self.index, self.label) == (other.index, other.label) and \
            self.mask.shape == other.mask.shape and bool(np.array_equal(self.mask, other.mask))

    def __hash__(self) -> int:
        return hash((self.index, self.label, self.mask.shape, self.mask.tobytes()))

    def __repr__(self) -> str:
        return (f"MaskPrompt(shape={self.mask.shape}, area={self.area}, index={self.index}, "
                f"label={self.label})")


Prompt = Box | Point | MaskPrompt
PROMPT_TYPES = (Box, Point, MaskPrompt)


def describe(prompt: Prompt, where: str = "slice") -> str:
    """One line for people: ``"box (y0=1, x0=2, y1=5, x1=6) on slice 3"``, ``"+ point ..."``.

    Examples
    --------
    >>> describe(Point(3, 4, index=7, positive=False), "frame")
    '- point (y=3, x=4) on frame 7'
    """
    if isinstance(prompt, Box):
        what = f"box (y0={prompt.y0}, x0={prompt.x0}, y1={prompt.y1}, x1={prompt.x1})"
    elif isinstance(prompt, Point):
        what = f"{prompt.sign} point (y={prompt.y:g}, x={prompt.x:g})"
    else:
        what = f"mask ({prompt.area} pixels)"
    return f"{what} on {where} {prompt.index}"


@dataclass(frozen=True)
class PromptSet:
    """All prompts of one structure, in the order they were given (module doc).

    Parameters
    ----------
    label : int
        Structure id (``>= 1``); every prompt must carry it.
    prompts : sequence of Box, Point or MaskPrompt
        In the order they were given.

    Examples
    --------
    >>> s = PromptSet.from_box(Box(2, 2, 8, 8, index=5, label=3))
    >>> s = s.add(Point(4, 4, index=9, label=3, positive=False))
    >>> s.frames, len(s), s.first_frame, s.last_frame
    ((5, 9), 2, 5, 9)
    >>> [type(p).__name__ for p in s.on(9)]
    ['Point']
    """

    label: int
    prompts: tuple = field(default_factory=tuple)

    def __post_init__(self) -> None:
        label = int(self.label)
        if label < 1:
            raise ValueError(f"structure id must be >= 1, got {label}")
        prompts = tuple(self.prompts)
        for p in prompts:
            if not isinstance(p, PROMPT_TYPES):
                raise TypeError(f"not a prompt: {p!r}")
            if p.label != label:
                raise ValueError(f"prompt {p!r} is for structure {p.label}, not {label}")
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "prompts", prompts)

    @classmethod
    def from_box(cls, box: Box) -> PromptSet:
        """The one-line case: one box on its key slice/frame."""
        return cls(box.label, (box,))

    @classmethod
    def of(cls, prompts: Iterable[Prompt], label: int | None = None) -> PromptSet:
        """A set from prompts (their ``label`` unless ``label`` relabels them)."""
        prompts = list(prompts)
        if label is None:
            if not prompts:
                raise ValueError("an empty prompt set needs a label")
            label = prompts[0].label
        return cls(label, tuple(p if p.label == label else replace(p, label=label)
                                for p in prompts))

    def __len__(self) -> int:
        return len(self.prompts)

    def __iter__(self):
        return iter(self.prompts)

    @property
    def frames(self) -> tuple[int, ...]:
        """Conditioning frames: the distinct slice/frame indices that carry prompts, sorted."""
        return tuple(sorted({p.index for p in self.prompts}))

    @property
    def first_frame(self) -> int:
        """The first conditioning frame (forward propagation starts here)."""
        return self.frames[0]

    @property
    def last_frame(self) -> int:
        """The last conditioning frame (backward propagation starts here)."""
        return self.frames[-1]

    @property
    def boxes(self) -> tuple[Box, ...]:
        """The boxes, in order."""
        return tuple(p for p in self.prompts if isinstance(p, Box))

    @property
    def points(self) -> tuple[Point, ...]:
        """The points, in order."""
        return tuple(p for p in self.prompts if isinstance(p, Point))

    def on(self, index: int) -> tuple[Prompt, ...]:
        """Every prompt on frame ``index``, in order."""
        return tuple(p for p in self.prompts if p.index == int(index))

    def active(self, index: int) -> tuple[Prompt, ...]:
        """The prompts that still count on frame ``index``: from its last box or mask on.

        Examples
        --------
        >>> s = PromptSet.of([Point(1, 1, index=2), Box(0, 0, 4, 4, index=2),
        ...                   Point(2, 2, index=2, positive=False)])
        >>> [type(p).__name__ for p in s.active(2)]
        ['Box', 'Point']
        """
        on = self.on(index)
        start = max((i for i, p in enumerate(on) if not isinstance(p, Point)), default=0)
        return on[start:]

    def add(self, prompt: Prompt) -> PromptSet:
        """A new set with ``prompt`` appended (relabelled to this structure)."""
        if prompt.label != self.label:
            prompt = replace(prompt, label=self.label)
        return PromptSet(self.label, (*self.prompts, prompt))

    def remove(self, position: int) -> PromptSet:
        """A new set without the prompt at ``position`` (``-1``: the last one, an undo)."""
        items = list(self.prompts)
        del items[position]
        return PromptSet(self.label, tuple(items))

    def locates(self) -> bool:
        """Whether some prompt says where the structure is (box, positive point, non-empty mask)."""
        return any(isinstance(p, Box) or (isinstance(p, Point) and p.positive)
                   or (isinstance(p, MaskPrompt) and p.area > 0) for p in self.prompts)

    def validate(self, shape: Sequence[int], *, name: str | None = None,
                 where: str = "slice", source: str | None = None,
                 partial: bool = False) -> None:
        """Refuse prompts that do not fit a frame stack of ``shape = (n, H, W, ...)``.

        ``partial=True`` checks each prompt only (a set still being given, such as a
        person's first click): no prompt at all, or only negative ones, is then fine.

        Raises
        ------
        napari_segeval.InvalidPromptError
            One line naming the structure (and ``source``, a file) and the prompt:
            a frame that does not exist, a box or point outside the slice, a mask of
            another shape, no prompt at all, or only negative points / empty masks.

        Examples
        --------
        >>> PromptSet.of([Point(3, 40, index=1)]).validate((4, 16, 16))
        Traceback (most recent call last):
        ...
        napari_segeval._errors.InvalidPromptError: structure 1: + point (y=3, x=40) on slice 1 lies outside the 16 x 16 slice
        >>> PromptSet.of([Point(3, 4, index=1, positive=False)]).validate((4, 16, 16), partial=True)
        """
        n, h, w = int(shape[0]), int(shape[1]), int(shape[2])
        who = f"structure {self.label}" + (f" ({name})" if name else "")
        if source:
            who = f"{source}: {who}"
        if not self.prompts and not partial:
            raise InvalidPromptError(f"{who}: no prompts")
        for p in self.prompts:
            if not 0 <= p.index < n:
                raise InvalidPromptError(
                    f"{who}: {describe(p, where)}: {where} {p.index} does not exist "
                    f"(0..{n - 1})")
            if isinstance(p, Box) and not (p.y0 < h and p.x0 < w and p.y1 > 0 and p.x1 > 0):
                raise InvalidPromptError(
                    f"{who}: {describe(p, where)} lies outside the {h} x {w} {where}")
            if isinstance(p, Point):
                py, px = p.pixel
                if not (0 <= py < h and 0 <= px < w):
                    raise InvalidPromptError(
                        f"{who}: {describe(p, where)} lies outside the {h} x {w} {where}")
            if isinstance(p, MaskPrompt) and p.mask.shape != (h, w):
                raise InvalidPromptError(
                    f"{who}: mask prompt on {where} {p.index} has shape "
                    f"{p.mask.shape[0]} x {p.mask.shape[1]}, the {where}s are {h} x {w}")
        if not partial and not self.locates():
            raise InvalidPromptError(
                f"{who}: only negative points (or empty masks): add a box, a positive "
                "point or a mask that shows where the structure is")


def encode_mask(mask: np.ndarray) -> dict:
    """Run-length encoding of a 2D boolean mask (C order, first run is background).

    Examples
    --------
    >>> m = np.array([[0, 1, 1], [0, 0, 1]], bool)
    >>> encode_mask(m)
    {'size': [2, 3], 'counts': [1, 2, 2, 1]}
    >>> bool(np.array_equal(decode_mask(encode_mask(m)), m))
    True
    """
    flat = np.asarray(mask, dtype=bool).ravel()
    change = np.flatnonzero(np.diff(flat.astype(np.int8))) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    counts = np.diff(bounds).tolist()
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
        vals = [_integer(d[k], k) for k in ("y0", "x0", "y1", "x1")]
        return Box(*vals, index=index, label=label)
    if kind == "point":
        positive = d.get("positive", True)
        if not isinstance(positive, bool):
            raise ValueError(f"'positive' must be true or false, got {positive!r}")
        return Point(_number(d["y"], "y"), _number(d["x"], "x"), index=index, label=label,
                     positive=positive)
    if kind == "mask":
        return MaskPrompt(decode_mask(d["rle"]), index=index, label=label)
    raise ValueError(f"unknown prompt type {kind!r} (box, point or mask)")


def _integer(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
        raise ValueError(f"{what} must be an integer, got {v!r}")
    return int(v)


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{what} must be a number, got {v!r}")
    return float(v)


@dataclass
class PromptFile:
    """The prompt sets of one case with the frame-stack shape and structure names.

    Parameters
    ----------
    sets : dict of int to PromptSet
        By structure id, in the order the structures were prompted.
    shape : tuple of int, optional
        ``(n, H, W)`` of the frame stack the prompts are for (``(1, H, W)``: a 2D image).
    names : dict of int to str
        Structure names (optional per id).

    Examples
    --------
    >>> pf = PromptFile({1: PromptSet.from_box(Box(1, 1, 3, 3, index=0))}, (2, 8, 8), {1: "liver"})
    >>> PromptFile.from_json(json.loads(json.dumps(pf.to_json()))) == pf
    True
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
                {"label": lab, "name": self.names.get(lab),
                 "prompts": [prompt_to_dict(p) for p in s.prompts]}
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
            for _i, s in enumerate(obj["structures"]):
                label = _integer(s["label"], "label")
                if label in sets:
                    raise ValueError(f"structure {label} is listed twice")
                prompts = [prompt_from_dict(d, label) for d in s["prompts"]]
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
        return (self.shape == other.shape and self.names == other.names
                and list(self.sets.items()) == list(other.sets.items()))

    def check(self, shape: Sequence[int], structures: Mapping[int, str] | None = None,
              present: Iterable[int] | None = None, *, where: str = "slice",
              source: str | None = None) -> None:
        """Refuse prompts for another image or unknown structures, then validate every set.

        ``shape`` is the case's ``(n, H, W)``; ``structures`` its names by id; ``present``
        the ids its labels hold (when known), so a prompt for a structure the case does
        not have is refused.
        """
        src = source or "prompts"
        shape = tuple(int(s) for s in shape[:3])
        if self.shape is not None and tuple(self.shape) != shape:
            raise InvalidPromptError(
                f"{src}: the prompts are for an image of shape {list(self.shape)}, "
                f"this one is {list(shape)}")
        structures = dict(structures or {})
        known = set(structures) | set(present or ())
        for lab, s in self.sets.items():
            name = self.names.get(lab)
            if name and structures.get(lab) and structures[lab] != name:
                raise InvalidPromptError(
                    f"{src}: structure {lab} is {name!r} in the prompts file but "
                    f"{structures[lab]!r} in the case")
            if known and lab not in known:
                raise InvalidPromptError(
                    f"{src}: unknown structure {lab}" + (f" ({name})" if name else "")
                    + f": the case has {', '.join(str(k) for k in sorted(known))}")
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
