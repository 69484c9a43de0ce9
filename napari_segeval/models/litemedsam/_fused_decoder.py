"""LiteMedSAM's mask decoder on a CPU: the box-free work once per embedding, each box alone.

Image-to-token attention as two matrix products, tokens token-major, projections on oneDNN;
equal to the module to float rounding, a box's logits the same beside others
(docs/model_cards.md). No gradients. Imports torch: import it only inside functions.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F

from ._fused import _Lin
from ._network import EMBED_SIZE, Attention, LayerNorm2d, LiteMedSAMNet, TwoWayBlock

#: Image tokens upscaled at a time: the largest intermediate 2 MiB, in cache (docs/model_cards.md).
UP_TOKENS = 1024


def _lin(*layers: torch.nn.Linear) -> _Lin:
    """One float32 projection computing ``layers`` (their outputs side by side)."""
    w = torch.cat([m.weight.detach().float() for m in layers]).contiguous()
    b = torch.cat([m.bias.detach().float() for m in layers]).contiguous()
    return _Lin(w, b)


def _transposed(conv: torch.nn.ConvTranspose2d) -> _Lin:
    """A 2 x 2, stride 2 transposed conv as each token's projection to ``(i, j, channel)``."""
    w, bias = conv.weight.detach().float(), conv.bias  # (in, out, 2, 2)
    assert bias is not None
    cin, cout = int(w.shape[0]), int(w.shape[1])
    weight = w.permute(2, 3, 1, 0).reshape(4 * cout, cin).contiguous()
    bias = bias.detach().float().repeat(4).contiguous()
    return _Lin(weight, bias)


class FusedDecoder:
    """The mask decoder of a :class:`~._network.LiteMedSAMNet` for box prompts, on a CPU."""

    def __init__(self, net: LiteMedSAMNet) -> None:
        dec = net.mask_decoder
        t = dec.transformer
        self.net = net
        self.heads = int(t.blocks()[0].self_attn.heads)
        self.eye = torch.eye(self.heads)
        with torch.no_grad():
            pe = net.dense_pe().float()
            self.key_pe = pe[0].flatten(1).t().contiguous()  # (4096, 256)
            self.dense = net.prompt_encoder.no_mask_embed.weight.detach().float()[0]
            self.out_tokens = torch.cat([dec.iou_token.weight, dec.mask_tokens.weight]).float()
            # each block's image projections: keys+pe feed the token-to-image keys and the
            # image-to-token queries; the values
            self.blocks = [
                (
                    _lin(b.cross_attn_token_to_image.k_proj, b.cross_attn_image_to_token.q_proj),
                    _lin(b.cross_attn_token_to_image.v_proj),
                )
                for b in t.blocks()
            ]
            fin = t.final_attn_token_to_image
            self.final = (_lin(fin.k_proj), _lin(fin.v_proj))
            convt1, norm, _, convt2, _ = cast(
                "tuple[torch.nn.ConvTranspose2d, LayerNorm2d, object, torch.nn.ConvTranspose2d, object]",
                tuple(dec.output_upscaling),
            )
            self.up1, self.up2 = _transposed(convt1), _transposed(convt2)
            self.up_norm = norm
        self.dec = dec

    @staticmethod
    def _to_image(
        attn: Attention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> torch.Tensor:
        """The prompt tokens ``q`` ``(B, 7, 256)`` attend to the projected image keys and
        values ``(B or 1, 4096, inner)``."""
        b = q.shape[0]
        kh, vh = (attn.split_heads(x).expand(b, -1, -1, -1) for x in (k, v))
        return attn.attend(q, kh, vh)

    def _to_tokens(
        self,
        blk: TwoWayBlock,
        keys: torch.Tensor,
        q_img: torch.Tensor,
        queries: torch.Tensor,
        pe: torch.Tensor,
    ) -> torch.Tensor:
        """``norm4(keys + image-to-token attention)`` of the image tokens ``(B, 4096, 256)``."""
        attn = blk.cross_attn_image_to_token
        b, t, _ = queries.shape
        heads = self.heads
        kt = attn.k_proj(queries + pe)  # (B, 7, inner): the prompt tokens' keys, values
        vt = attn.v_proj(queries)
        d = kt.shape[-1] // heads
        # every head's scores in one product, transposed: the block-diagonal (heads * 7,
        # inner) of the heads' keys (scale folded in) times the image queries; the softmax
        # over a head's 7 tokens then runs along 4096-long rows (along rows of 7, as
        # attention kernels lay them out, it took longer than all the rest)
        kbd = torch.einsum("bthi,hg->bhtgi", kt.view(b, t, heads, d) * d**-0.5, self.eye)
        kbd = kbd.reshape(b, heads * t, heads * d)
        if q_img.shape[0] == 1:
            scores = torch.mm(kbd.reshape(b * heads * t, -1), q_img[0].t())
        else:
            scores = torch.bmm(kbd, q_img.transpose(1, 2))
        probs = scores.view(b, heads, t, -1).softmax(dim=2).view(b, heads * t, -1)
        # the values' block diagonal (heads * 7, inner) times the output projection
        vbd = torch.einsum("bthi,hg->bhtgi", vt.view(b, t, heads, d), self.eye)
        out = attn.out_proj
        c = torch.matmul(vbd.reshape(b, heads * t, heads * d), out.weight.t())
        keys = torch.baddbmm(keys.expand(b, -1, -1), probs.transpose(1, 2), c).add_(out.bias)
        return blk.norm4(keys)

    @torch.no_grad()
    def __call__(
        self, embedding: torch.Tensor, boxes: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(B, 1, 256, 256)`` and predicted IoU ``(B,)`` of ``boxes`` on ``embedding``."""
        # the box-free part, once: image tokens (token-major), +pe, first projections
        src = (embedding.float()[0] + self.dense[:, None, None]).flatten(1).t().contiguous()
        src = src[None]  # (1, 4096, 256)
        kq_lin, v_lin = self.blocks[0]  # the first block's image projections
        kq, v_img = kq_lin(src + self.key_pe), v_lin(src)
        boxes = boxes.to(embedding.device)
        outs = [self._box(boxes[i : i + 1], src, kq, v_img) for i in range(boxes.shape[0])]
        return torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs])

    def _box(
        self, box: torch.Tensor, src: torch.Tensor, kq: torch.Tensor, v_img: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One box ``(1, 4)``: logits ``(1, 1, 256, 256)`` and IoU ``(1,)``."""
        net, dec = self.net, self.dec
        sparse = net.prompt_encoder.embed_boxes(box).float()
        tokens = torch.cat([self.out_tokens[None], sparse], dim=1)
        inner = kq.shape[-1] // 2
        queries, keys = tokens, src
        for blk, (kq_lin, v_lin) in zip(dec.transformer.blocks(), self.blocks):
            if blk.skip_first_pe:  # the first block: its self-attention skips the pe
                queries = blk.norm1(blk.self_attn(tokens, tokens, tokens))
            else:  # later blocks: every projection depends on the box
                q = queries + tokens
                queries = blk.norm1(queries + blk.self_attn(q, q, queries))
                kq, v_img = kq_lin(keys + self.key_pe), v_lin(keys)
            k_img, q_img = kq[..., :inner], kq[..., inner:]
            t2i = self._to_image(blk.cross_attn_token_to_image, queries + tokens, k_img, v_img)
            queries = blk.norm2(queries + t2i)
            queries = blk.norm3(queries + blk.mlp(queries))
            keys = self._to_tokens(blk, keys, q_img, queries, tokens)
        # the final token-to-image attention
        k_proj, v_proj = self.final
        fin = dec.transformer.final_attn_token_to_image
        hs = dec.transformer.norm_final_attn(
            queries
            + self._to_image(fin, queries + tokens, k_proj(keys + self.key_pe), v_proj(keys))
        )
        # upscaling: each image token -> its 2 x 2 sub-pixels, twice, and the logits, in
        # chunks of tokens (the 4 x 4 x 32 values of a token are not kept beyond a chunk)
        hyper = dec.output_hypernetworks_mlps[0](hs[:, 1])  # (B, 32)
        n = EMBED_SIZE * EMBED_SIZE
        per = max(1, min(n, UP_TOKENS))
        out = torch.empty(1, n, 16)
        for t0 in range(0, n, per):
            up = self.up1(keys[0, t0 : t0 + per]).view(-1, 4, self.up_norm.weight.shape[0])
            up = self.up2(F.gelu(self.up_norm.last(up)), gelu=True)  # (per, 4, 4 * 32)
            out[0, t0 : t0 + per] = (up.view(-1, hyper.shape[-1]) @ hyper[0]).view(-1, 16)
        # (B, y, x, i, j, i2, j2) -> row 4y + 2i + i2, column 4x + 2j + j2
        g = out.view(1, EMBED_SIZE, EMBED_SIZE, 2, 2, 2, 2).permute(0, 1, 3, 5, 2, 4, 6)
        logits = g.reshape(1, 1, 4 * EMBED_SIZE, 4 * EMBED_SIZE)
        return logits, dec.iou_prediction_head(hs[:, 0])[:, 0]
