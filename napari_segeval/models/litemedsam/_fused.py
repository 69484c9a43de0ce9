"""LiteMedSAM's image encoder on a CPU through oneDNN's fused kernels (``torch.ops.mkldnn``).

Linear layers and depthwise convolutions with their GELUs and residual sums fused (torch's
MKL path is slow on AMD CPUs); bf16 keeps the residual stream in fp32 but not the masks
(docs/model_cards.md). No gradients. Imports torch: import it only inside functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ._network import (
    CHUNK_FLOATS,
    EMBED_SIZE,
    ConvBN,
    MBConv,
    PatchEmbed,
    PatchMerging,
    TinyViTBlock,
    TinyViTEncoder,
    chunked,
    in_windows,
    rows_per_band,
)

_LIN = torch.ops.mkldnn._linear_pointwise
_CONV = torch.ops.mkldnn._convolution_pointwise

#: Floats per band of rows or chunk of windows or tokens: the module's (docs/model_cards.md).
BAND_FLOATS = CHUNK_FLOATS
#: A block's weights: qkv, bias, projection; fc1, fc2 (the norms: the block's own).
_BlockWeights = tuple["_Lin", torch.Tensor, "_Lin", "_Lin", "_Lin"]


def mkldnn_available() -> bool:
    """Whether this torch build has the oneDNN kernels of the fused encoder and decoder."""
    return bool(torch.backends.mkldnn.is_available())


def _act(gelu: bool) -> tuple[str, list, str]:
    """oneDNN's fused activation, its scalars and its algorithm: a GELU (erf) or none."""
    return ("gelu", [], "none") if gelu else ("none", [], "")


@dataclass(frozen=True)
class _Lin:
    """A linear map's weight ``(out, in)`` and bias, in the encoder's dtype."""

    w: torch.Tensor
    b: torch.Tensor | None

    def __call__(self, x: torch.Tensor, gelu: bool = False) -> torch.Tensor:
        return _LIN(x.to(self.w.dtype), self.w, self.b, *_act(gelu))

    def add(self, x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        """``linear(x) + other``: one kernel in the weights' dtype, else summed in ``other``'s."""
        if other.dtype != self.w.dtype:
            return other + self(x)
        return _LIN.binary(x, other, self.w, self.b, "add")


@dataclass(frozen=True)
class _Depthwise:
    """A depthwise 3 x 3 convolution (batch norm folded): weight, bias, stride."""

    w: torch.Tensor
    b: torch.Tensor
    stride: int

    def __call__(self, x: torch.Tensor, gelu: bool) -> torch.Tensor:
        """``x`` channels-last ``(B, C, H, W)`` -> channels-last output (padding 1)."""
        s, groups = [self.stride, self.stride], int(self.w.shape[0])
        return _CONV(x.to(self.w.dtype), self.w, self.b, [1, 1], s, [1, 1], groups, *_act(gelu))


class FusedEncoder:
    """The encoder of a :class:`~._network.TinyViTEncoder` on oneDNN's fused kernels."""

    def __init__(
        self,
        encoder: TinyViTEncoder,
        dtype: torch.dtype = torch.float32,
        band_floats: int = BAND_FLOATS,
        parts: Iterable[str] = ("conv", "attention", "mlp"),
    ) -> None:
        self.dtype = dtype
        self.stream = torch.float32  # the residual stream's dtype
        #: the parts in ``dtype`` (others in the stream's): the encoder benchmark's variants
        self.parts = frozenset(parts)
        self.band_floats = int(band_floats)
        self.encoder = encoder
        self._lin: dict[int, _Lin] = {}
        self._dw: dict[int, _Depthwise] = {}
        self._blocks: dict[int, _BlockWeights] = {}
        with torch.no_grad():
            for module in encoder.modules():
                self._prepare(module)
            conv1, _, conv2, _ = encoder.neck_layers()
            s = self.stream
            self._neck_w = (
                _Lin(self._t(conv1.weight[:, :, 0, 0], s), None),
                self._t(conv2.weight, s),
            )

    # -- weights -------------------------------------------------------------------------
    def _t(self, t: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        return t.detach().to(dtype or self.dtype).contiguous()

    def _conv(self, conv: ConvBN, dtype: torch.dtype | None = None) -> None:
        """Store the folded convolution (depthwise, or 1 x 1 as a linear map) once."""
        if id(conv) in self._lin or id(conv) in self._dw:
            return
        w, b = conv.folded()
        if conv.c.groups > 1:
            self._dw[id(conv)] = _Depthwise(
                self._t(w, dtype), self._t(b, dtype), int(conv.c.stride[0])
            )
        else:
            self._lin[id(conv)] = _Lin(self._t(w[:, :, 0, 0], dtype), self._t(b, dtype))

    def _linear(self, lin: nn.Linear, dtype: torch.dtype, scale: Any = None) -> _Lin:
        w, b = lin.weight, lin.bias
        if scale is not None:
            w, b = w * scale[:, None], b * scale
        return _Lin(self._t(w, dtype), self._t(b, dtype))

    def _prepare(self, m: nn.Module) -> None:
        # the stem's and the blocks' depthwise convs map the stream itself
        if isinstance(m, PatchEmbed):
            for c in m.convs():
                self._conv(c, self.stream)
        elif isinstance(m, TinyViTBlock):
            self._conv(m.local_conv, self.stream)
            a = m.attn
            d = a.head_dim
            # 1 / sqrt(d) folded into the query rows of every head
            scale = torch.ones(a.qkv.out_features)
            scale.view(a.heads, 3, d)[:, 0] = d**-0.5
            at = self.dtype if "attention" in self.parts else self.stream
            mt = self.dtype if "mlp" in self.parts else self.stream
            self._blocks[id(m)] = (
                self._linear(a.qkv, at, scale),
                self._t(a.bias(), at),
                self._linear(a.proj, at),
                self._linear(m.mlp.fc1, mt),
                self._linear(m.mlp.fc2, mt),
            )
        elif isinstance(m, ConvBN):
            self._conv(m, None if "conv" in self.parts else self.stream)

    # -- forward -------------------------------------------------------------------------
    @torch.no_grad()
    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, 3, 256, 256)`` -> float32 ``(B, 256, 64, 64)``."""
        enc = self.encoder
        x = self._stem(images.to(self.stream))
        for m in enc.layers.modules():  # the stages' blocks and patch mergings, in order
            if isinstance(m, MBConv):
                x = self._mbconv(m, x)
            elif isinstance(m, TinyViTBlock):
                x = self._block(m, x)
            elif isinstance(m, PatchMerging):
                x = self._merge(m, x)
        return self._neck(x).float().contiguous()

    def _stem(self, x: torch.Tensor) -> torch.Tensor:
        first, second = self.encoder.patch_embed.convs()
        l1, l2 = self._lin[id(first)], self._lin[id(second)]
        rows = rows_per_band(x.shape[3], first.c.out_channels, x.shape[0], self.band_floats)
        x = x.permute(0, 2, 3, 1).contiguous()
        return chunked(lambda t: l2(l1(t, gelu=True)), x, rows, 1)

    def _bands(
        self,
        x: torch.Tensor,
        expand: ConvBN,
        dw: ConvBN,
        finish: Callable[[torch.Tensor, int, int], torch.Tensor],
    ) -> torch.Tensor:
        """``finish(gelu(dw(gelu(expand(x)))), r0, r1)`` in bands of output rows."""
        e_lin, d_conv = self._lin[id(expand)], self._dw[id(dw)]
        b, h, w, _ = x.shape
        stride = int(dw.c.stride[0])
        out_h = (h - 1) // stride + 1
        rows = max(1, rows_per_band(w, int(dw.c.out_channels), b, self.band_floats) // stride)
        bands = []
        for o0 in range(0, out_h, rows):
            o1 = min(out_h, o0 + rows)
            lo = max(0, stride * (o0 - 1))
            e = e_lin(x[:, lo : min(h, stride * (o1 - 1) + 2)], gelu=True)
            d = d_conv(e.permute(0, 3, 1, 2), gelu=True)
            first = (stride * o0 - lo) // stride
            bands.append(finish(d[:, :, first : first + o1 - o0], o0, o1))
        return bands[0] if len(bands) == 1 else torch.cat(bands, dim=1)

    def _mbconv(self, blk: MBConv, x: torch.Tensor) -> torch.Tensor:
        project = self._lin[id(blk.conv3)]

        def finish(d: torch.Tensor, r0: int, r1: int) -> torch.Tensor:
            # project(d) + x in one kernel, then the GELU in place
            return torch.ops.aten.gelu_(project.add(d.permute(0, 2, 3, 1), x[:, r0:r1]))

        return self._bands(x, blk.conv1, blk.conv2, finish)

    def _merge(self, m: PatchMerging, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        if x.ndim == 3:
            x = x.view(b, m.resolution, m.resolution, -1)
        project = self._lin[id(m.conv3)]
        out = self._bands(
            x, m.conv1, m.conv2, lambda d, _r0, _r1: project(d.permute(0, 2, 3, 1)).to(self.stream)
        )
        return out.reshape(b, -1, out.shape[-1])

    def _attend(self, blk: TinyViTBlock, x: torch.Tensor) -> torch.Tensor:
        """``x + attention(x)`` of windows ``(B, N, C)`` (chunks of windows)."""
        qkv, bias, proj = self._blocks[id(blk)][:3]
        a = blk.attn
        n = x.shape[1]

        def attend(xc: torch.Tensor) -> torch.Tensor:
            bc = xc.shape[0]
            t = qkv(a.norm(xc)).view(bc, n, a.heads, 3 * a.head_dim)
            q, k, v = t.permute(0, 2, 1, 3).split(a.head_dim, dim=3)
            scores = torch.matmul(q, k.transpose(-2, -1)).add_(bias)
            o = torch.matmul(scores.softmax(dim=-1), v).transpose(1, 2).reshape(bc, n, -1)
            return proj.add(o, xc)

        return chunked(attend, x, max(1, self.band_floats // (a.heads * n * n)))

    def _block(self, blk: TinyViTBlock, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        r = blk.resolution
        x = in_windows(x, r, blk.window, lambda t: self._attend(blk, t))  # x + attention(x)
        local = self._dw[id(blk.local_conv)]
        x = local(x.view(b, r, r, c).permute(0, 3, 1, 2), gelu=False)
        x = x.permute(0, 2, 3, 1).reshape(b, n, c)
        fc1, fc2 = self._blocks[id(blk)][3:]
        norm = blk.mlp.norm
        per = rows_per_band(int(fc1.w.shape[0]), 1, b, self.band_floats)
        return chunked(lambda t: fc2.add(fc1(norm(t), gelu=True), t), x, per, 1)

    def _neck(self, x: torch.Tensor) -> torch.Tensor:
        lin, w3 = self._neck_w
        _, norm1, _, norm2 = self.encoder.neck_layers()
        b = x.shape[0]
        x = norm1.last(lin(x)).view(b, EMBED_SIZE, EMBED_SIZE, -1)
        x = _CONV(x.permute(0, 3, 1, 2), w3, None, [1, 1], [1, 1], [1, 1], 1, *_act(False))
        return norm2.last(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def inference_encoder(
    encoder: TinyViTEncoder, precision: str, device: torch.device
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The encoder a backend runs without gradients, for a resolved ``precision``."""
    if device.type == "cpu" and mkldnn_available():
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        return FusedEncoder(encoder, dtype)
    if precision == "bf16":
        kind = device.type

        def autocast(images: torch.Tensor) -> torch.Tensor:
            with torch.autocast(kind, dtype=torch.bfloat16):
                return encoder(images).float()

        return autocast
    return None
