"""Prompt sets: every prompt of one structure, on any slices/frames, in the order given.

Points are at pixel centres (``(3, 4)`` is the centre of row 3, column 4; floats allowed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from napari_segeval._errors import InvalidPromptError
from napari_segeval.prompts.box import Box


@dataclass(frozen=True)
class Point:
    """A click on one slice/frame: positive (the structure is here) or negative (it is not).

    Parameters
    ----------
    y, x
        Pixel-centre coordinates on slice/frame ``index`` (array indices).
    index
        Slice (volume) or frame (video) index; ``0`` for a 2D image.
    label
        Structure id (``>= 1``).
    positive
        ``True`` for a positive (foreground) click, ``False`` for a negative one.

    Examples
    --------
    >>> p = Point(10, 20.25, index=3, positive=False)
    >>> p.pixel, p.sign
    ((10, 20), '-')
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
        for name, kind in (("index", int), ("label", int), ("positive", bool)):
            object.__setattr__(self, name, kind(getattr(self, name)))

    @property
    def pixel(self) -> tuple[int, int]:
        """The pixel ``(row, column)`` the point lies in (nearest pixel centre)."""
        return math.floor(self.y + 0.5), math.floor(self.x + 0.5)

    @property
    def sign(self) -> str:
        """``"+"`` for a positive point, ``"-"`` for a negative one."""
        return "+" if self.positive else "-"

    def to_napari(self, ndim: int = 3) -> np.ndarray:
        """napari Points coordinates ``(index, y, x)`` (or ``(y, x)`` for ``ndim=2``)."""
        if ndim == 2:
            return np.array([self.y, self.x], dtype=float)
        lead = np.zeros(ndim - 2, dtype=float)
        lead[-1] = self.index
        return np.concatenate([lead, [self.y, self.x]])

    @classmethod
    def from_napari(cls, coords: Sequence[float], label: int = 1, positive: bool = True) -> Point:
        """A point from napari Points coordinates (last two ``(y, x)``, the one before the index)."""
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
        for name, value in (("mask", m), ("index", int(self.index)), ("label", int(self.label))):
            object.__setattr__(self, name, value)

    @property
    def area(self) -> int:
        """Number of foreground pixels."""
        return int(self.mask.sum())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MaskPrompt):
            return NotImplemented
        return (
            (self.index, self.label) == (other.index, other.label)
            and self.mask.shape == other.mask.shape
            and bool(np.array_equal(self.mask, other.mask))
        )

    def __hash__(self) -> int:
        return hash((self.index, self.label, self.mask.shape, self.mask.tobytes()))

    def __repr__(self) -> str:
        return (
            f"MaskPrompt(shape={self.mask.shape}, area={self.area}, index={self.index}, "
            f"label={self.label})"
        )


Prompt = Box | Point | MaskPrompt


def describe(prompt: Prompt, where: str = "slice") -> str:
    """One line for people: ``"box (y0=1, x0=2, y1=5, x1=6) on slice 3"``, ``"+ point ..."``."""
    if isinstance(prompt, Box):
        what = f"box (y0={prompt.y0}, x0={prompt.x0}, y1={prompt.y1}, x1={prompt.x1})"
    elif isinstance(prompt, Point):
        what = f"{prompt.sign} point (y={prompt.y:g}, x={prompt.x:g})"
    else:
        what = f"mask ({prompt.area} pixels)"
    return f"{what} on {where} {prompt.index}"


@dataclass(frozen=True)
class PromptSet:
    """All prompts of one structure, in the order given: replaying them gives the same masks.

    SAM2's per-frame rules, which every backend follows: a box replaces its frame's earlier
    box and points, a mask everything earlier on its frame, points add (:meth:`active`). A
    set needs a box, a positive point or a non-empty mask (negative points alone are refused).

    Parameters
    ----------
    label
        Structure id (``>= 1``); every prompt must carry it.
    prompts
        Boxes, points and mask prompts in the order they were given.
    """

    label: int
    prompts: tuple = field(default_factory=tuple)

    def __post_init__(self) -> None:
        label = int(self.label)
        if label < 1:
            raise ValueError(f"structure id must be >= 1, got {label}")
        prompts = tuple(self.prompts)
        for p in prompts:
            if not isinstance(p, Prompt):
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
        return cls(
            label, tuple(p if p.label == label else replace(p, label=label) for p in prompts)
        )

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
        """The prompts that still count on frame ``index``: from its last box or mask on."""
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
        return any(
            isinstance(p, Box)
            or (isinstance(p, Point) and p.positive)
            or (isinstance(p, MaskPrompt) and p.area > 0)
            for p in self.prompts
        )

    def validate(
        self,
        shape: Sequence[int],
        *,
        name: str | None = None,
        where: str = "slice",
        source: str | None = None,
        partial: bool = False,
    ) -> None:
        """Refuse prompts that do not fit a frame stack of ``shape = (n, H, W, ...)``.

        ``partial=True`` checks each prompt only (a set still being given): no prompt, or
        only negative ones, is then fine.

        Raises
        ------
        napari_segeval.InvalidPromptError
            One line naming the structure (and ``source``) and the prompt: a missing frame,
            a prompt outside the slice, a mask of another shape, or nothing that locates it.
        """
        n, h, w = int(shape[0]), int(shape[1]), int(shape[2])
        who = (f"{source}: " if source else "") + f"structure {self.label}"
        who += f" ({name})" if name else ""
        if not self.prompts and not partial:
            raise InvalidPromptError(f"{who}: no prompts")
        for p in self.prompts:
            if not 0 <= p.index < n:
                raise InvalidPromptError(
                    f"{who}: {describe(p, where)}: {where} {p.index} does not exist (0..{n - 1})"
                )
            if (isinstance(p, Box) and not (p.y0 < h and p.x0 < w and p.y1 > 0 and p.x1 > 0)) or (
                isinstance(p, Point) and not (0 <= p.pixel[0] < h and 0 <= p.pixel[1] < w)
            ):
                raise InvalidPromptError(
                    f"{who}: {describe(p, where)} lies outside the {h} x {w} {where}"
                )
            if isinstance(p, MaskPrompt) and p.mask.shape != (h, w):
                raise InvalidPromptError(
                    f"{who}: mask prompt on {where} {p.index} has shape "
                    f"{p.mask.shape[0]} x {p.mask.shape[1]}, the {where}s are {h} x {w}"
                )
        if not partial and not self.locates():
            raise InvalidPromptError(
                f"{who}: only negative points (or empty masks): add a box, a positive "
                "point or a mask that shows where the structure is"
            )
