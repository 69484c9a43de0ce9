"""LiteMedSAM's image encoder for inference on a CPU, through oneDNN's fused kernels.

:class:`FusedEncoder` computes what :class:`~._network.TinyViTEncoder` computes (batch
norms folded) with the linear layers and depthwise convolutions on oneDNN
(``torch.ops.mkldnn``; torch's MKL path is slow on AMD CPUs), GELUs and residual sums
fused in. ``dtype=torch.bfloat16`` runs the heavy parts in bf16 and keeps the residual
stream in fp32; it does not keep the masks, so ``auto`` runs fp32 (docs/model_cards.md
has the measurements). No gradients. Imports torch: import it only inside functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._network import (
    EMBED_SIZE,
    ConvBN,
    ConvStage,
    MBConv,
    PatchEmbed,
    PatchMerging,
    TinyViTBlock,
    TinyViTEncoder,
)

_LIN = torch.ops.mkldnn._linear_pointwise
_CONV = torch.ops.mkldnn._convolution_pointwise

#: Floats per intermediate tensor of a band of the first stage (:func:`rows_per_band`) and
#: per chunk of windows or tokens: the module's number of calls (docs/model_cards.md).
BAND_FLOATS = 1 << 21


def rows_per_band(width: int, channels: int, batch: int = 1, floats: int = BAND_FLOATS) -> int:
    """Rows of a ``width x channels`` map per band of about ``floats`` floats (at least 1).

    Examples
    --------
    >>> rows_per_band(256, 256), rows_per_band(256, 256, floats=1)
    (32, 1)
    """
    return max(1, int(floats) // max(1, width * channels * batch))


def mkldnn_available() -> bool:
    """Whether this torch build has the oneDNN kernels the fused encoder runs.

    Examples
    --------
    >>> isinstance(mkldnn_available(), bool)
    True
    """
    return bool(torch.backends.mkldnn.is_available())


@dataclass(frozen=True)
class _Lin:
    """A linear map's weight ``(out, in)`` and bias, in the encoder's dtype."""

    w: torch.Tensor
    b: torch.Tensor | None

    def __call__(self, x: torch.Tensor, gelu: bool = False) -> torch.Tensor:
        x = x.to(self.w.dtype)
        if gelu:
            return _LIN(x, self.w, self.b, "gelu", [], "none")
        return _LIN(x, self.w, self.b, "none", [], "")

    def add(self, x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        """``linear(x) + other`` (one kernel when both are in the weights' dtype; else the
        sum in ``other``'s dtype)."""
        if other.dtype != self.w.dtype:
            return other + self(x)
        return _LIN.binary(x, other, self.w, self.b, "add")


@dataclass(frozen=True)
class _Depthwise:
    """A depthwise 3 x 3 convolution (batch norm folded): weight, bias, stride."""

    w: torch.Tensor
    b: torch.Tensor
    stride: int

    def __call__(self, x: torch.Tensor, padding: tuple[int, int], gelu: bool) -> torch.Tensor:
        """``x`` channels-last ``(B, C, H, W)`` -> channels-last output."""
        x = x.to(self.w.dtype)
        s = [self.stride, self.stride]
        groups = int(self.w.shape[0])
        if gelu:
            return _CONV(x, self.w, self.b, list(padding), s, [1, 1], groups, "gelu", [], "none")
        return _CONV(x, self.w, self.b, list(padding), s, [1, 1], groups, "none", [], "")


@dataclass(frozen=True)
class _Norm:
    w: torch.Tensor
    b: torch.Tensor
    eps: float

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (int(self.w.shape[0]),), self.w, self.b, self.eps)


class FusedEncoder:
    """The encoder of a :class:`~._network.TinyViTEncoder` on oneDNN's fused kernels."""

    def __init__(
        self,
        encoder: TinyViTEncoder,
        dtype: torch.dtype = torch.float32,
        band_floats: int = BAND_FLOATS,
        stream: torch.dtype = torch.float32,
        parts: Iterable[str] = ("conv", "attention", "mlp"),
    ) -> None:
        self.dtype = dtype
        self.stream = stream
        self.parts = frozenset(parts)
        self.band_floats = int(band_floats)
        self.encoder = encoder
        self._p: dict[int, object] = {}
        with torch.no_grad():
            for module in encoder.modules():
                self._prepare(module)

    # -- weights -------------------------------------------------------------------------
    def _t(self, t: torch.Tensor | None, dtype: torch.dtype | None = None) -> torch.Tensor | None:
        return None if t is None else t.detach().to(dtype or self.dtype).contiguous()

    def _conv(self, conv: ConvBN, dtype: torch.dtype | None = None) -> _Lin | _Depthwise:
        w, b = conv.folded()
        if conv.c.groups > 1:
            return _Depthwise(self._t(w, dtype), self._t(b, dtype), int(conv.c.stride[0]))  # type: ignore[arg-type]
        return _Lin(self._t(w[:, :, 0, 0], dtype), self._t(b, dtype))  # type: ignore[arg-type]

    def _linear(
        self, lin: nn.Linear, scale: torch.Tensor | None = None, dtype: torch.dtype | None = None
    ) -> _Lin:
        w, b = lin.weight, lin.bias
        if scale is not None:
            w, b = w * scale[:, None], b * scale
        return _Lin(self._t(w, dtype), self._t(b, dtype))  # type: ignore[arg-type]

    def _norm(self, norm: nn.Module) -> _Norm:
        s = self.stream
        return _Norm(self._t(norm.weight, s), self._t(norm.bias, s), float(norm.eps))  # type: ignore[arg-type]

    def _prepare(self, m: nn.Module) -> None:
        if isinstance(m, TinyViTBlock):  # its depthwise conv maps the stream itself
            self._p[id(m.local_conv)] = self._conv(m.local_conv, self.stream)
        if isinstance(m, PatchEmbed):
            for c in (m.seq[0], m.seq[2]):
                self._p[id(c)] = self._conv(c, self.stream)
        if isinstance(m, ConvBN):
            self._p.setdefault(id(m), self._conv(m, None if "conv" in self.parts else self.stream))
        elif isinstance(m, TinyViTBlock):
            a = m.attn
            d = a.head_dim
            # 1 / sqrt(d) folded into the query rows of every head
            scale = torch.ones(a.qkv.out_features)
            scale.view(a.heads, 3, d)[:, 0] = d**-0.5
            at = self.dtype if "attention" in self.parts else self.stream
            mt = self.dtype if "mlp" in self.parts else self.stream
            self._p[id(m)] = (
                self._norm(a.norm),
                self._linear(a.qkv, scale, at),
                self._t(a.bias(), at),
                self._linear(a.proj, None, at),
                self._norm(m.mlp.norm),
                self._linear(m.mlp.fc1, None, mt),
                self._linear(m.mlp.fc2, None, mt),
            )
        elif isinstance(m, TinyViTEncoder):
            conv1, norm1, conv2, norm2 = m.neck
            self._p[id(m)] = (
                _Lin(self._t(conv1.weight[:, :, 0, 0], self.stream), None),  # type: ignore[arg-type]
                self._norm(norm1),
                self._t(conv2.weight, self.stream),
                self._norm(norm2),
            )

    def _get(self, m: nn.Module) -> object:
        return self._p[id(m)]

    # -- forward -------------------------------------------------------------------------
    @torch.no_grad()
    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, 3, 256, 256)`` -> float32 ``(B, 256, 64, 64)``."""
        enc = self.encoder
        x = self._stem(images.to(self.stream))
        for layer in enc.layers:
            if isinstance(layer, ConvStage):
                for blk in layer.blocks:
                    x = self._mbconv(blk, x)
                x = self._merge(layer.downsample, x)
            else:
                for blk in layer.blocks:
                    x = self._block(blk, x)
                if layer.downsample is not None:
                    x = self._merge(layer.downsample, x)
        return self._neck(x).float().contiguous()

    def _stem(self, x: torch.Tensor) -> torch.Tensor:
        first, _, second = self.encoder.patch_embed.seq
        l1, l2 = self._get(first), self._get(second)
        b, _, h, w = x.shape
        x = x.permute(0, 2, 3, 1).contiguous()
        rows = rows_per_band(w, first.c.out_channels, b, self.band_floats)
        outs = [l2(l1(x[:, i : i + rows], gelu=True)) for i in range(0, h, rows)]  # type: ignore[operator]
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)

    def _bands(self, x: torch.Tensor, expand: ConvBN, dw: ConvBN, finish) -> torch.Tensor:  # noqa: ANN001
        """``finish(gelu(dw(gelu(expand(x)))), r0, r1)`` in bands of output rows."""
        e_lin, d_conv = self._get(expand), self._get(dw)
        b, h, w, _ = x.shape
        stride = int(dw.c.stride[0])
        out_h = (h - 1) // stride + 1
        rows = max(1, rows_per_band(w, int(dw.c.out_channels), b, self.band_floats) // stride)
        bands = []
        for o0 in range(0, out_h, rows):
            o1 = min(out_h, o0 + rows)
            lo = max(0, stride * (o0 - 1))
            e = e_lin(x[:, lo : min(h, stride * (o1 - 1) + 2)], gelu=True)  # type: ignore[operator]
            d = d_conv(e.permute(0, 3, 1, 2), (1, 1), gelu=True)  # type: ignore[operator]
            first = (stride * o0 - lo) // stride
            bands.append(finish(d[:, :, first : first + o1 - o0], o0, o1))
        return bands[0] if len(bands) == 1 else torch.cat(bands, dim=1)

    def _mbconv(self, blk: MBConv, x: torch.Tensor) -> torch.Tensor:
        project = self._get(blk.conv3)

        def finish(d: torch.Tensor, r0: int, r1: int) -> torch.Tensor:
            # project(d) + x in one kernel, then the GELU in place
            return torch.ops.aten.gelu_(project.add(d.permute(0, 2, 3, 1), x[:, r0:r1]))  # type: ignore[attr-defined]

        return self._bands(x, blk.conv1, blk.conv2, finish)

    def _merge(self, m: PatchMerging, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        if x.ndim == 3:
            x = x.view(b, m.resolution, m.resolution, -1)
        project = self._get(m.conv3)
        out = self._bands(
            x,
            m.conv1,
            m.conv2,
            lambda d, _r0, _r1: project(d.permute(0, 2, 3, 1)).to(self.stream),  # type: ignore[operator]
        )
        return out.reshape(b, -1, out.shape[-1])

    def _attend(self, blk: TinyViTBlock, x: torch.Tensor) -> torch.Tensor:
        """``x + attention(x)`` of windows ``(B, N, C)`` (chunks of windows)."""
        norm, qkv, bias, proj = self._get(blk)[:4]  # type: ignore[index]
        a = blk.attn
        b, n, _ = x.shape
        per = max(1, self.band_floats // (a.heads * n * n))
        outs = []
        for i in range(0, b, per):
            xc = x[i : i + per]
            bc = xc.shape[0]
            t = qkv(norm(xc)).view(bc, n, a.heads, 3 * a.head_dim)
            q, k, v = t.permute(0, 2, 1, 3).split(a.head_dim, dim=3)
            scores = torch.matmul(q, k.transpose(-2, -1)).add_(bias)
            o = torch.matmul(scores.softmax(dim=-1), v).transpose(1, 2).reshape(bc, n, -1)
            outs.append(proj.add(o, xc))
        return outs[0] if len(outs) == 1 else torch.cat(outs)

    def _windows(self, blk: TinyViTBlock, x: torch.Tensor) -> torch.Tensor:
        """``x + attention(x)`` on the token grid, window by window (zero-padded)."""
        h = w = blk.resolution
        s = blk.window
        b, n, c = x.shape
        if h == s and w == s:
            return self._attend(blk, x)
        g = x.view(b, h, w, c)
        pad_b, pad_r = (s - h % s) % s, (s - w % s) % s
        if pad_b or pad_r:
            g = F.pad(g, (0, 0, 0, pad_r, 0, pad_b))
        ph, pw = h + pad_b, w + pad_r
        nh, nw = ph // s, pw // s
        g = g.view(b, nh, s, nw, s, c).transpose(2, 3).reshape(b * nh * nw, s * s, c)
        g = self._attend(blk, g)
        g = g.view(b, nh, nw, s, s, c).transpose(2, 3).reshape(b, ph, pw, c)
        if pad_b or pad_r:
            g = g[:, :h, :w]
        return g.reshape(b, n, c)

    def _block(self, blk: TinyViTBlock, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        r = blk.resolution
        x = self._windows(blk, x)
        local = self._get(blk.local_conv)
        x = local(x.view(b, r, r, c).permute(0, 3, 1, 2), (1, 1), gelu=False)  # type: ignore[operator]
        x = x.permute(0, 2, 3, 1).reshape(b, n, c)
        norm, fc1, fc2 = self._get(blk)[4:]  # type: ignore[index]
        per = rows_per_band(int(fc1.w.shape[0]), 1, b, self.band_floats)
        outs = [
            fc2.add(fc1(norm(x[:, i : i + per]), gelu=True), x[:, i : i + per])
            for i in range(0, n, per)
        ]
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)

    def _neck(self, x: torch.Tensor) -> torch.Tensor:
        lin, norm1, w3, norm2 = self._get(self.encoder)  # type: ignore[misc]
        b = x.shape[0]
        x = norm1(lin(x)).view(b, EMBED_SIZE, EMBED_SIZE, -1)
        x = _CONV(x.permute(0, 3, 1, 2), w3, None, [1, 1], [1, 1], [1, 1], 1, "none", [], "")
        return norm2(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def inference_encoder(
    encoder: TinyViTEncoder, precision: str, device: torch.device
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The encoder a backend runs without gradients, for a resolved ``precision``.

    Examples
    --------
    >>> enc = TinyViTEncoder().eval()
    >>> type(inference_encoder(enc, "fp32", torch.device("cpu"))).__name__
    'FusedEncoder'
    """
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
