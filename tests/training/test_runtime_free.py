"""The runtime never imports the training code (house rule: training sits above models)."""

import subprocess
import sys


def test_loading_and_running_models_imports_no_training_code():
    code = (
        "import sys, numpy as np\n"
        "from napari_segeval.models.registry import load_dense, load_promptable\n"
        "from napari_segeval.models.dense import segment_case\n"
        "from napari_segeval.models.dense.unet2d import UNet2DModel\n"
        "from napari_segeval.phantoms.ct import make_ct_case\n"
        "case = make_ct_case(2000, shape=(16, 48, 48))\n"
        "segment_case(load_dense('builtin-ct', device='cpu'), case)\n"
        "m = load_promptable('builtin', device='cpu')\n"
        "m.preprocess(case.image, 'CT')\n"
        "print(sorted(n for n in sys.modules if n.startswith('napari_segeval.training')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
