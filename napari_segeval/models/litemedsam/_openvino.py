"""LiteMedSAM's image encoder on OpenVINO's CPU runtime (``--precision openvino``), in fp32.

The converted encoder is cached by the weights' SHA-256, this code and the OpenVINO version;
a cache that cannot be used is skipped (docs/model_cards.md). Imports torch: import it only
inside functions.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import torch

from napari_segeval._paths import user_cache

from ._network import IMAGE_SIZE, TinyViTEncoder


def cache_key(weights_sha256: str, ov_version: str) -> str:
    """The converted encoder's name: the weights' SHA-256, this network's code, OpenVINO."""
    code = Path(__file__).with_name("_network.py").read_bytes()
    tag = hashlib.sha256(code + ov_version.encode() + torch.__version__.encode()).hexdigest()
    return f"encoder-{weights_sha256[:12]}-{tag[:12]}"


def _convert(encoder: TinyViTEncoder) -> Any:
    import openvino as ov

    x = torch.zeros(1, 3, IMAGE_SIZE, IMAGE_SIZE)
    with torch.no_grad():
        return ov.convert_model(encoder, example_input=x, input=[tuple(x.shape)])


def converted_model(encoder: TinyViTEncoder, key: str | None) -> Any:
    """The OpenVINO model of ``encoder``, cached under ``key`` (None: no cache)."""
    import openvino as ov

    if key is None:
        return _convert(encoder)
    folder = user_cache("litemedsam")
    xml = folder / f"{key}.xml"
    if xml.is_file() and xml.with_suffix(".bin").is_file():
        try:
            return ov.Core().read_model(str(xml))
        except Exception:  # a damaged cache entry: convert again  # noqa: BLE001
            pass
    model = _convert(encoder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            part = Path(tmp) / f"{key}.xml"
            ov.save_model(model, str(part), compress_to_fp16=False)
            # the weights first: a reader that finds the .xml finds its .bin
            os.replace(part.with_suffix(".bin"), xml.with_suffix(".bin"))
            os.replace(part, xml)
    except OSError:  # a cache that cannot be written: run without it
        pass
    return model


class OpenVINOEncoder:
    """LiteMedSAM's encoder compiled by OpenVINO for the CPU (f32: bf16 loses the masks)."""

    def __init__(self, encoder: TinyViTEncoder, key: str | None) -> None:
        import openvino as ov

        model = converted_model(encoder, key)
        config = {
            "INFERENCE_PRECISION_HINT": "f32",
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": torch.get_num_threads(),
        }
        self.compiled = ov.Core().compile_model(model, "CPU", config)
        self.request = self.compiled.create_infer_request()
        # one inference request, which two threads must not run at once (a viewer's
        # worker and a batch run may share the loaded model)
        self._lock = threading.Lock()

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """``(B, 3, 256, 256)`` -> float32 ``(B, 256, 64, 64)``."""
        x = images.detach().to("cpu", torch.float32).contiguous().numpy()
        outs = []
        with self._lock:
            for i in range(x.shape[0]):
                res = self.request.infer([x[i : i + 1]])
                outs.append(torch.from_numpy(res[0].copy()))
        return torch.cat(outs)


def openvino_encoder(encoder: TinyViTEncoder, weights_sha256: str | None) -> OpenVINOEncoder:
    """:class:`OpenVINOEncoder` of ``encoder`` (cached by the weights' SHA-256; None: no cache)."""
    from napari_segeval._errors import MissingDependencyError
    from napari_segeval.models.precision import OPENVINO_EXTRA

    try:
        import openvino as ov
    except ImportError:
        raise MissingDependencyError(
            "openvino", OPENVINO_EXTRA, "LiteMedSAM's --precision openvino"
        ) from None
    key = None if weights_sha256 is None else cache_key(weights_sha256, ov.__version__)
    return OpenVINOEncoder(encoder, key)
