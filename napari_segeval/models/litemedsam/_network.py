"""LiteMedSAM's network (bowang-lab/MedSAM, branch LiteMedSAM): TinyViT-5M encoder, SAM's decoder.

Names are those of the authors' ``lite_medsam.pth`` (it loads strictly; none of their code
runs). Imports torch: import it only inside functions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

#: The input size of the encoder (the longest side of every slice is resized to it).
IMAGE_SIZE = 256
#: The size of the image embedding (and of the decoder's positional grid).
EMBED_SIZE = 64


class ConvBN(nn.Module):
    """A bias-free convolution followed by a batch norm (names ``c`` and ``bn``)."""

    def __init__(
        self, cin: int, cout: int, kernel: int = 1, stride: int = 1, pad: int = 0, groups: int = 1
    ) -> None:
        super().__init__()
        self.c = nn.Conv2d(cin, cout, kernel, stride, pad, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self._folded: tuple[torch.Tensor, torch.Tensor] | None = None

    def folded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(weight, bias)`` of the convolution with the batch norm folded in."""
        if self._folded is not None:
            return self._folded
        bn, mean, var = self.bn, self.bn.running_mean, self.bn.running_var
        assert mean is not None and var is not None  # tracked statistics (eval mode)
        scale = bn.weight / torch.sqrt(var + bn.eps)
        return self.c.weight * scale[:, None, None, None], bn.bias - mean * scale

    @torch.no_grad()
    def freeze(self) -> None:
        """Fold the batch norm once (the weights are frozen for inference)."""
        w, b = self.folded()
        self._folded = (w.detach().clone(), b.detach().clone())

    def forward(
        self, x: torch.Tensor, padding: int | tuple[int, int] | None = None
    ) -> torch.Tensor:
        """The convolution of ``(B, C, H, W)`` (``padding`` overrides the layer's)."""
        w, b = self.folded()
        c = self.c
        return F.conv2d(
            x, w, b, c.stride, c.padding if padding is None else padding, groups=c.groups
        )

    def linear(self, x: torch.Tensor) -> torch.Tensor:
        """A 1 x 1 convolution of channels-last ``(..., C)`` as a linear map."""
        w, b = self.folded()
        return F.linear(x, w[:, :, 0, 0], b)


class LayerNorm2d(nn.Module):
    """Layer norm over the channels of a ``(B, C, H, W)`` map (SAM's, eps 1e-6)."""

    def __init__(self, channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]

    def last(self, x: torch.Tensor) -> torch.Tensor:
        """The norm of channels-last ``(..., C)`` by ``F.layer_norm`` (the fused paths')."""
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


# ---------------------------------------------------------------------------- encoder
#: Floats per intermediate tensor of the encoder's chunked steps (8 MiB): the first stage's
#: 64 MiB maps went back to the system after each use, so each step paid for fresh pages;
#: chunks are reused (same values: each chunk is the same arithmetic on its rows).
CHUNK_FLOATS = 1 << 21


def chunked(
    f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, size: int, dim: int = 0
) -> torch.Tensor:
    """``f`` on chunks of ``size`` along ``dim`` of ``x``, concatenated (one chunk: no copy)."""
    outs = [f(c) for c in x.split(size, dim)]
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim)


def rows_per_band(width: int, channels: int, batch: int = 1, floats: int = CHUNK_FLOATS) -> int:
    """Rows of a ``width x channels`` map per band of about ``floats`` floats (at least 1)."""
    return max(1, int(floats) // max(1, width * channels * batch))


def in_windows(
    x: torch.Tensor, resolution: int, window: int, attend: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """``attend`` on the zero-padded ``window x window`` windows of tokens ``(B, r * r, C)``."""
    h = w = resolution
    s = window
    b, n, c = x.shape
    if h == s:
        return attend(x)
    x = x.view(b, h, w, c)
    pad_b, pad_r = (s - h % s) % s, (s - w % s) % s
    if pad_b or pad_r:
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
    ph, pw = h + pad_b, w + pad_r
    nh, nw = ph // s, pw // s
    x = x.view(b, nh, s, nw, s, c).transpose(2, 3).reshape(b * nh * nw, s * s, c)
    x = attend(x)
    x = x.view(b, nh, nw, s, s, c).transpose(2, 3).reshape(b, ph, pw, c)
    if pad_b or pad_r:
        x = x[:, :h, :w]
    return x.reshape(b, n, c)


def _depthwise_rows(
    x: torch.Tensor,
    expand: ConvBN,
    dw: ConvBN,
    finish: Callable[[torch.Tensor, int, int], torch.Tensor],
) -> torch.Tensor:
    """``finish(gelu(dw(gelu(expand(x)))), r0, r1)`` in bands of output rows, channels-last."""
    b, h, w, _ = x.shape
    stride = int(dw.c.stride[0])
    out_h = (h - 1) // stride + 1
    hidden = int(dw.c.out_channels)
    rows = max(1, rows_per_band(w, hidden, b) // stride)
    bands = []
    for o0 in range(0, out_h, rows):
        o1 = min(out_h, o0 + rows)
        lo, hi = o0 * stride - 1, (o1 - 1) * stride + 2
        top, bottom = max(0, -lo), max(0, hi - h)
        e = F.gelu(expand.linear(x[:, max(lo, 0) : min(hi, h)]))
        if top or bottom:
            e = F.pad(e, (0, 0, 0, 0, top, bottom))
        d = dw(e.permute(0, 3, 1, 2), padding=(0, 1))  # channels-last NCHW view
        bands.append(finish(F.gelu(d).permute(0, 2, 3, 1), o0, o1))
    return bands[0] if len(bands) == 1 else torch.cat(bands, dim=1)


class MBConv(nn.Module):
    """Inverted residual block: 1 x 1 expand, depthwise 3 x 3, 1 x 1 project, residual."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        hidden = 4 * dim
        self.conv1 = ConvBN(dim, hidden)
        self.conv2 = ConvBN(hidden, hidden, 3, 1, 1, groups=hidden)
        self.conv3 = ConvBN(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def finish(d: torch.Tensor, r0: int, r1: int) -> torch.Tensor:
            return F.gelu(self.conv3.linear(d) + x[:, r0:r1])

        return _depthwise_rows(x, self.conv1, self.conv2, finish)


class PatchMerging(nn.Module):
    """1 x 1 conv, depthwise 3 x 3 (stride 2, or 1 into 320 channels), 1 x 1 conv; tokens out."""

    def __init__(self, resolution: int, dim: int, out_dim: int) -> None:
        super().__init__()
        self.resolution = resolution
        stride = 1 if out_dim in (320, 448, 576) else 2
        self.conv1 = ConvBN(dim, out_dim)
        self.conv2 = ConvBN(out_dim, out_dim, 3, stride, 1, groups=out_dim)
        self.conv3 = ConvBN(out_dim, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Channels-last ``(B, H, W, C)`` or tokens ``(B, H * W, C)`` -> tokens."""
        b = x.shape[0]
        if x.ndim == 3:
            x = x.view(b, self.resolution, self.resolution, -1)
        out = _depthwise_rows(x, self.conv1, self.conv2, lambda d, _r0, _r1: self.conv3.linear(d))
        return out.reshape(b, -1, out.shape[-1])


class Stage(nn.Module):
    """A TinyViT stage: its blocks, then (except the last stage) a patch merging."""

    def __init__(self, blocks: Sequence[nn.Module], downsample: PatchMerging | None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x if self.downsample is None else self.downsample(x)


def _offset_index(window: int) -> tuple[int, torch.Tensor]:
    """Offset count and each position pair's id ``|dy| * window + |dx|`` (the authors' order)."""
    yx = torch.tensor(list(itertools.product(range(window), range(window))))
    d = (yx[:, None] - yx[None]).abs()
    return window * window, d[..., 0] * window + d[..., 1]


class WindowAttention(nn.Module):
    """Multi-head self-attention inside a window, with a learnt bias per relative offset."""

    attention_bias_idxs: torch.Tensor

    def __init__(self, dim: int, heads: int, window: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        count, index = _offset_index(window)
        self.attention_biases = nn.Parameter(torch.zeros(heads, count))
        self.register_buffer("attention_bias_idxs", index, persistent=False)
        self._bias: torch.Tensor | None = None

    def bias(self) -> torch.Tensor:
        """The ``(heads, N, N)`` bias (gathered once after :meth:`freeze`)."""
        if self._bias is not None:
            return self._bias
        return self.attention_biases[:, self.attention_bias_idxs]

    @torch.no_grad()
    def freeze(self) -> None:
        """Gather the bias once (the weights are frozen for inference)."""
        self._bias = self.bias().clone()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Windows ``(B, N, C)`` -> ``(B, N, C)``, in chunks of windows."""
        n = x.shape[1]
        return chunked(self._attend, x, max(1, CHUNK_FLOATS // (self.heads * n * n)))

    def _attend(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        qkv = self.qkv(self.norm(x)).view(b, n, self.heads, 3 * self.head_dim)
        q, k, v = qkv.permute(0, 2, 1, 3).split(self.head_dim, dim=3)
        scores = torch.matmul(q, k.transpose(-2, -1))  # softmax(q k^T / sqrt(d) + bias) v
        scores.mul_(self.head_dim**-0.5).add_(self.bias().to(x.dtype))
        out = torch.matmul(scores.softmax(dim=-1), v)
        return self.proj(out.transpose(1, 2).reshape(b, n, -1))


class Mlp(nn.Module):
    """Layer norm, linear, GELU, linear (tokens in chunks)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        per = max(1, CHUNK_FLOATS // (x.shape[0] * self.fc1.out_features))
        return chunked(lambda t: self.fc2(F.gelu(self.fc1(self.norm(t)))), x, per, 1)


class TinyViTBlock(nn.Module):
    """Window attention (zero-padded to whole windows), depthwise 3 x 3 conv, MLP."""

    def __init__(self, dim: int, resolution: int, heads: int, window: int) -> None:
        super().__init__()
        self.resolution = resolution
        self.window = window
        self.attn = WindowAttention(dim, heads, window)
        self.mlp = Mlp(dim, 4 * dim)
        self.local_conv = ConvBN(dim, dim, 3, 1, 1, groups=dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        r = self.resolution
        x = x + in_windows(x, r, self.window, self.attn)
        # the depthwise conv on the token grid: a channels-last view, no copy
        x = self.local_conv(x.view(b, r, r, c).permute(0, 3, 1, 2))
        x = x.permute(0, 2, 3, 1).reshape(b, n, c)
        return x + self.mlp(x)


class PatchEmbed(nn.Module):
    """LiteMedSAM's stem: 1 x 1 conv-BN, GELU, 1 x 1 conv-BN (no downsampling)."""

    def __init__(self, cin: int, dim: int) -> None:
        super().__init__()
        self.seq = nn.Sequential(ConvBN(cin, dim // 2), nn.GELU(), ConvBN(dim // 2, dim))

    def convs(self) -> tuple[ConvBN, ConvBN]:
        """The two convolutions (either side of the GELU)."""
        return cast(ConvBN, self.seq[0]), cast(ConvBN, self.seq[2])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, 3, H, W)`` -> channels-last ``(B, H, W, dim)``."""
        first, second = self.convs()
        rows = rows_per_band(x.shape[3], first.c.out_channels, x.shape[0])
        x = x.permute(0, 2, 3, 1)
        return chunked(lambda t: second.linear(F.gelu(first.linear(t))), x, rows, 1)


class TinyViTEncoder(nn.Module):
    """The image encoder: ``(B, 3, 256, 256)`` in [0, 1] -> ``(B, 256, 64, 64)``."""

    dims = (64, 128, 160, 320)
    depths = (2, 2, 6, 2)
    heads = (2, 4, 5, 10)
    windows = (7, 7, 14, 7)

    def __init__(self) -> None:
        super().__init__()
        d = self.dims
        self.patch_embed = PatchEmbed(3, d[0])
        res = (IMAGE_SIZE, IMAGE_SIZE // 2, IMAGE_SIZE // 4, IMAGE_SIZE // 4)
        self.layers = nn.ModuleList()
        for i, depth in enumerate(self.depths):  # MBConv blocks first, then attention
            blocks = [
                MBConv(d[0])
                if i == 0
                else TinyViTBlock(d[i], res[i], self.heads[i], self.windows[i])
                for _ in range(depth)
            ]
            self.layers.append(
                Stage(blocks, PatchMerging(res[i], d[i], d[i + 1]) if i < 3 else None)
            )
        self.neck = nn.Sequential(
            nn.Conv2d(d[3], 256, 1, bias=False),
            LayerNorm2d(256),
            nn.Conv2d(256, 256, 3, padding=1, bias=False),
            LayerNorm2d(256),
        )

    def neck_layers(self) -> tuple[nn.Conv2d, LayerNorm2d, nn.Conv2d, LayerNorm2d]:
        """The neck's 1 x 1 conv, norm, 3 x 3 conv, norm."""
        return cast("tuple[nn.Conv2d, LayerNorm2d, nn.Conv2d, LayerNorm2d]", tuple(self.neck))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        for layer in self.layers:
            x = layer(x)
        b, _, c = x.shape
        conv1, norm1, conv2, norm2 = self.neck_layers()
        x = F.linear(x, conv1.weight[:, :, 0, 0]).view(b, EMBED_SIZE, EMBED_SIZE, -1)
        x = norm1(x.permute(0, 3, 1, 2))
        return norm2(conv2(x.contiguous(memory_format=torch.channels_last)))


# ---------------------------------------------------------------------------- prompts
class PositionEmbeddingRandom(nn.Module):
    """SAM's positional encoding by random spatial frequencies (a fixed buffer)."""

    positional_encoding_gaussian_matrix: torch.Tensor

    def __init__(self, features: int) -> None:
        super().__init__()
        self.register_buffer("positional_encoding_gaussian_matrix", torch.zeros(2, features))

    def encode(self, coords: torch.Tensor) -> torch.Tensor:
        """Points normalized to [0, 1] ``(..., 2)`` (x, y) -> ``(..., 2 * features)``."""
        coords = (2 * coords - 1) @ self.positional_encoding_gaussian_matrix
        coords = 2 * math.pi * coords
        return torch.cat([torch.sin(coords), torch.cos(coords)], dim=-1)

    def grid(self, size: int) -> torch.Tensor:
        """The encoding of every cell centre of a ``size x size`` grid, ``(C, size, size)``."""
        dev = self.positional_encoding_gaussian_matrix.device
        centres = (torch.arange(size, device=dev, dtype=torch.float32) + 0.5) / size
        y, x = torch.meshgrid(centres, centres, indexing="ij")
        return self.encode(torch.stack([x, y], dim=-1)).permute(2, 0, 1)


class PromptEncoder(nn.Module):
    """SAM's prompt encoder (box corners and the 'no mask' embedding are what LiteMedSAM uses)."""

    def __init__(self, dim: int = 256, mask_channels: int = 16) -> None:
        super().__init__()
        self.pe_layer = PositionEmbeddingRandom(dim // 2)
        self.point_embeddings = nn.ModuleList(nn.Embedding(1, dim) for _ in range(4))
        self.not_a_point_embed = nn.Embedding(1, dim)
        self.mask_downscaling = nn.Sequential(
            nn.Conv2d(1, mask_channels // 4, 2, 2),
            LayerNorm2d(mask_channels // 4),
            nn.GELU(),
            nn.Conv2d(mask_channels // 4, mask_channels, 2, 2),
            LayerNorm2d(mask_channels),
            nn.GELU(),
            nn.Conv2d(mask_channels, dim, 1),
        )
        self.no_mask_embed = nn.Embedding(1, dim)

    def embed_boxes(self, boxes: torch.Tensor) -> torch.Tensor:
        """Boxes ``(B, 4)`` ``[x0, y0, x1, y1]`` in 256-pixel space -> ``(B, 2, 256)`` tokens."""
        corners = (boxes.float() + 0.5).reshape(-1, 2, 2) / IMAGE_SIZE
        corner_embeddings = (self.point_embeddings.get_parameter(f"{i}.weight") for i in (2, 3))
        return self.pe_layer.encode(corners) + torch.cat(tuple(corner_embeddings))

    def dense_pe(self) -> torch.Tensor:
        """The positional encoding of the image embedding grid, ``(1, 256, 64, 64)``."""
        return self.pe_layer.grid(EMBED_SIZE)[None]


# ---------------------------------------------------------------------------- decoder
class Attention(nn.Module):
    """SAM's attention with projections to ``dim // downsample`` channels."""

    def __init__(self, dim: int, heads: int, downsample: int = 1) -> None:
        super().__init__()
        inner = dim // downsample
        self.heads = heads
        self.q_proj = nn.Linear(dim, inner)
        self.k_proj = nn.Linear(dim, inner)
        self.v_proj = nn.Linear(dim, inner)
        self.out_proj = nn.Linear(inner, dim)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, N, C)`` -> ``(B, heads, N, C / heads)``."""
        b, n, c = x.shape
        return x.reshape(b, n, self.heads, c // self.heads).transpose(1, 2)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = (self.split_heads(f(t)) for f, t in ((self.k_proj, k), (self.v_proj, v)))
        return self.attend(q, k, v)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Attention of queries ``q`` ``(B, N, C)`` to projected, split keys and values."""
        out = F.scaled_dot_product_attention(self.split_heads(self.q_proj(q)), k, v)
        b, h, n, c = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(b, n, h * c))


class MLPBlock(nn.Module):
    """Linear, ReLU, linear."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(F.relu(self.lin1(x)))


class TwoWayBlock(nn.Module):
    """Token self-attention, token-to-image attention, MLP, image-to-token attention."""

    def __init__(self, dim: int, heads: int, mlp_dim: int, skip_first_pe: bool) -> None:
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.cross_attn_token_to_image = Attention(dim, heads, 2)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLPBlock(dim, mlp_dim)
        self.norm3 = nn.LayerNorm(dim)
        self.norm4 = nn.LayerNorm(dim)
        self.cross_attn_image_to_token = Attention(dim, heads, 2)
        self.skip_first_pe = skip_first_pe

    def forward(
        self,
        queries: torch.Tensor,
        keys: torch.Tensor,
        query_pe: torch.Tensor,
        key_pe: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.skip_first_pe:
            queries = self.self_attn(queries, queries, queries)
        else:
            q = queries + query_pe
            queries = queries + self.self_attn(q, q, queries)
        queries = self.norm1(queries)
        q, k = queries + query_pe, keys + key_pe
        queries = self.norm2(queries + self.cross_attn_token_to_image(q, k, keys))
        queries = self.norm3(queries + self.mlp(queries))
        q, k = queries + query_pe, keys + key_pe
        keys = self.norm4(keys + self.cross_attn_image_to_token(k, q, queries))
        return queries, keys


class TwoWayTransformer(nn.Module):
    """SAM's two-way transformer (depth 2, 256 channels, 8 heads, MLP 2048)."""

    def __init__(self, depth: int = 2, dim: int = 256, heads: int = 8, mlp_dim: int = 2048) -> None:
        super().__init__()
        self.layers = nn.ModuleList(TwoWayBlock(dim, heads, mlp_dim, i == 0) for i in range(depth))
        self.final_attn_token_to_image = Attention(dim, heads, 2)
        self.norm_final_attn = nn.LayerNorm(dim)

    def blocks(self) -> list[TwoWayBlock]:
        """The two-way blocks, in order."""
        return [cast(TwoWayBlock, layer) for layer in self.layers]

    def forward(
        self, image: torch.Tensor, image_pe: torch.Tensor, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keys = image.flatten(2).permute(0, 2, 1)
        key_pe = image_pe.flatten(2).permute(0, 2, 1)
        queries = tokens
        for layer in self.layers:
            queries, keys = layer(queries, keys, tokens, key_pe)
        q, k = queries + tokens, keys + key_pe
        queries = self.norm_final_attn(queries + self.final_attn_token_to_image(q, k, keys))
        return queries, keys


class MLP(nn.Module):
    """Linear layers with ReLU between them (SAM's hypernetwork and IoU head)."""

    def __init__(self, cin: int, hidden: int, cout: int, depth: int) -> None:
        super().__init__()
        sizes = [cin] + [hidden] * (depth - 1)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, [*sizes[1:], cout]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


class MaskDecoder(nn.Module):
    """SAM's mask decoder; :meth:`forward` gives the single-mask output (``multimask_output=False``)."""

    def __init__(self, dim: int = 256, outputs: int = 3) -> None:
        super().__init__()
        self.transformer = TwoWayTransformer(dim=dim)
        self.iou_token = nn.Embedding(1, dim)
        self.mask_tokens = nn.Embedding(outputs + 1, dim)
        self.output_upscaling = nn.Sequential(
            nn.ConvTranspose2d(dim, dim // 4, 2, 2),
            LayerNorm2d(dim // 4),
            nn.GELU(),
            nn.ConvTranspose2d(dim // 4, dim // 8, 2, 2),
            nn.GELU(),
        )
        self.output_hypernetworks_mlps = nn.ModuleList(
            MLP(dim, dim, dim // 8, 3) for _ in range(outputs + 1)
        )
        self.iou_prediction_head = MLP(dim, 256, outputs + 1, 3)

    def forward(
        self,
        embedding: torch.Tensor,
        image_pe: torch.Tensor,
        sparse: torch.Tensor,
        dense: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, 1, 256, 256)`` of the first mask token and its predicted IoU ``(B,)``."""
        b = sparse.shape[0]
        out = torch.cat([self.iou_token.weight, self.mask_tokens.weight], dim=0)
        tokens = torch.cat([out[None].expand(b, -1, -1), sparse], dim=1)
        src = embedding.expand(b, -1, -1, -1) + dense
        pos = image_pe.expand(b, -1, -1, -1)
        _, c, h, w = src.shape
        hs, keys = self.transformer(src, pos, tokens)
        up = self.output_upscaling(keys.transpose(1, 2).reshape(b, c, h, w))
        hyper = self.output_hypernetworks_mlps[0](hs[:, 1])  # the first mask token
        bb, cc, hh, ww = up.shape
        logits = (hyper[:, None] @ up.view(bb, cc, hh * ww)).view(bb, 1, hh, ww)
        return logits, self.iou_prediction_head(hs[:, 0])[:, 0]


class LiteMedSAMNet(nn.Module):
    """LiteMedSAM: ``image_encoder``, ``prompt_encoder``, ``mask_decoder`` (the state dict's names)."""

    def __init__(self) -> None:
        super().__init__()
        self.image_encoder = TinyViTEncoder()
        self.prompt_encoder = PromptEncoder()
        self.mask_decoder = MaskDecoder()
        self._dense_pe: torch.Tensor | None = None
        #: The inference encoder :meth:`encode` runs without gradients (None: the module).
        self.fast_encoder: Callable[[torch.Tensor], torch.Tensor] | None = None
        #: The inference decoder :meth:`decode` runs without gradients (None: the module).
        self.fast_decoder: (
            Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]] | None
        ) = None

    @torch.no_grad()
    def prepare_inference(self) -> LiteMedSAMNet:
        """Fold batch norms into convolutions, gather attention biases."""
        self.eval()
        for module in self.modules():
            if isinstance(module, (ConvBN, WindowAttention)):
                module.freeze()
        for p in self.parameters():
            p.requires_grad_(False)
        self._dense_pe = self.prompt_encoder.dense_pe()
        return self

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Image embeddings ``(B, 256, 64, 64)`` of ``(B, 3, 256, 256)`` inputs in [0, 1]."""
        fast = self.fast_encoder
        if fast is not None and not (torch.is_grad_enabled() and images.requires_grad):
            return fast(images)
        return self.image_encoder(images)

    def dense_pe(self) -> torch.Tensor:
        """The decoder's positional grid ``(1, 256, 64, 64)``."""
        return self._dense_pe if self._dense_pe is not None else self.prompt_encoder.dense_pe()

    def decode(
        self, embedding: torch.Tensor, boxes: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, 1, 256, 256)`` and predicted IoUs ``(B,)`` of boxes ``(B, 4)``."""
        fast = self.fast_decoder
        if fast is not None and not (torch.is_grad_enabled() and embedding.requires_grad):
            return fast(embedding, boxes)
        sparse = self.prompt_encoder.embed_boxes(boxes.to(embedding.device))
        dense = self.prompt_encoder.no_mask_embed.weight.reshape(1, -1, 1, 1)
        return self.mask_decoder(embedding, self.dense_pe().to(embedding.dtype), sparse, dense)
