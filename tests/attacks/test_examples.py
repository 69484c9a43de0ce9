"""The examples of the attacks' internal helpers, run as doctests.

Each entry is the helper's former docstring example, run in its module's namespace with
the flags of the package's own doctests but NUMBER (a pytest extension).
"""

import pytest

EXAMPLES = {
    "napari_segeval.attacks._problem.per_case_norm": """\
>>> import torch
>>> per_case_norm(torch.tensor([[3.0, -4.0]]), "l2").tolist()
[5.0]
""",
    "napari_segeval.attacks.core.ATTACKS": """\
>>> ATTACKS["pgd"].evaluations(AttackConfig("pgd", eps=0.1, steps=10, restarts=2), None)
22
>>> ATTACKS["fab"].evaluations(AttackConfig("fab", eps=0.1, steps=5), 3)
22
""",
    "napari_segeval.attacks.fab.fab_evaluations": """\
>>> from types import SimpleNamespace
>>> fab_evaluations(SimpleNamespace(target_ranks=None, steps=5, restarts=1), 3)
22
""",
    "napari_segeval.attacks.losses.get_loss": """\
>>> get_loss("ce").__name__
'cross_entropy'
""",
    "napari_segeval.attacks.losses.hard_dice_loss": """\
>>> import torch
>>> z = torch.tensor([[[5.0, 5.0, 0.0, 0.0], [0.0, 0.0, 5.0, 5.0]]])  # pred [0,0,1,1]
>>> round(float(hard_dice_loss(z, torch.tensor([[0, 1, 1, 1]]))[0]), 4)
0.2
""",
    "napari_segeval.attacks.promptable._record": """\
>>> _record(Box(1, 2, 3, 4, index=5, label=2))
{'label': 2, 'index': 5, 'box': [1, 2, 3, 4]}
""",
    "napari_segeval.attacks.square.p_selection": """\
>>> [p_selection(q, 10000, 0.8, "absolute") for q in (10, 11, 51, 8001)]
[0.8, 0.4, 0.2, 0.0015625]
""",
    "napari_segeval.attacks.square.square_side": """\
>>> square_side(0.8, [24, 48, 48]), square_side(0.01, [1, 64, 64]), square_side(1e-9, [9])
(35, 6, 1)
""",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example(name, run_example):
    run_example(name, EXAMPLES[name])
