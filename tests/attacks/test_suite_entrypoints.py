"""Square, FAB and the ROG options by name: the msd-robust attack hook and ``segeval attack``."""

import argparse
import json

import numpy as np
import pytest

from napari_segeval._errors import SegEvalError
from napari_segeval.attacks import AttackNotApplicable
from napari_segeval.cli._evaluate import parse_attack
from napari_segeval.evaluation.protocols import _dense as D
from napari_segeval.evaluation.protocols.msd_robust import MsdParams, skip_reason
from napari_segeval.models.registry import load_dense
from napari_segeval.phantoms.ct import make_ct_case


@pytest.fixture
def tiny(tiny_dense_weights):
    return load_dense(str(tiny_dense_weights), device="cpu")


@pytest.fixture(scope="module")
def case():
    return make_ct_case(11, shape=(10, 32, 32))


#: The attack dicts the rog preset lists (eps in normalized units; small steps for the test).
ROG_SUITE = [
    {
        "name": "apgd-ce",
        "eps": 0.2,
        "steps": 2,
        "restarts": 2,
        "schedule": "rog",
        "robust_threshold": 0.01,
        "reference": "labels",
    },
    {
        "name": "apgd-dlr",
        "eps": 0.2,
        "steps": 2,
        "restarts": 2,
        "schedule": "rog",
        "robust_threshold": 0.01,
        "reference": "labels",
    },
    {
        "name": "pgd",
        "eps": 0.2,
        "steps": 2,
        "restarts": 2,
        "step_size": 0.2 / 3,
        "select": "loss",
        "robust_threshold": 0.01,
        "reference": "labels",
    },
    {
        "name": "fab",
        "eps": 0.2,
        "steps": 2,
        "restarts": 2,
        "target_ranks": 1,
        "robust_threshold": 0.01,
        "reference": "labels",
    },
    {
        "name": "square",
        "eps": 0.2,
        "steps": 3,
        "loss": "hard-dice",
        "schedule": "absolute",
        "robust_threshold": 0.01,
        "reference": "labels",
    },
]


def test_the_rog_suite_runs_through_the_protocol_hook(tiny, case):
    params = MsdParams(overlap=0.5, mirror=False, postprocess=True)
    names = []
    for attack in ROG_SUITE:
        assert skip_reason(tiny, attack) is None  # 6 classes: APGD-DLR applies
        out = D.run_attack(tiny, case, attack, params)
        assert out.labels.shape == case.labels.shape
        # the budget in raw units: 0.2 normalized units of 30 HU each
        assert np.abs(out.perturbation).max() <= 0.2 * 30.0 * (1 + 1e-5)
        names.append(out.condition)
    assert names == [
        "apgd-ce-linf eps=0.2 steps=2 schedule=rog",
        "apgd-dlr-linf eps=0.2 steps=2 schedule=rog",
        "pgd-linf eps=0.2 steps=2 select=loss",
        "fab-linf eps=0.2 steps=2",
        "square-linf eps=0.2 steps=3 schedule=absolute loss=hard-dice",
    ]


def test_cli_attack_strings_reach_the_new_attacks(tiny, case):
    attack = parse_attack("square:eps=0.1,steps=2,p_init=0.5,seed=3")
    assert attack == {"name": "square", "eps": 0.1, "steps": 2, "p_init": 0.5, "seed": 3}
    cond = D.run_attack(tiny, case, attack, MsdParams()).condition
    assert cond == "square-linf eps=0.1 steps=2"
    cfg = D.attack_config(parse_attack("apgd-ce:eps=0.1,schedule=rog,robust_threshold=0.4"))
    assert (cfg.schedule, cfg.robust_threshold) == ("rog", 0.4)


def test_hook_refuses_bad_options_and_inapplicable_attacks(tiny, case):
    with pytest.raises(SegEvalError, match="does not apply"):
        D.run_attack(tiny, case, {"name": "pgd", "eps": 0.1, "schedule": "rog"}, MsdParams())
    with pytest.raises(SegEvalError, match="reference"):
        D.run_attack(tiny, case, {"name": "fgsm", "eps": 0.1, "reference": "gt"}, MsdParams())
    binary = type("Binary", (), {"num_classes": 2})()
    assert "at least 3 classes" in skip_reason(binary, {"name": "apgd-dlr", "eps": 0.1})
    assert skip_reason(binary, {"name": "mod:func"}) is None
    tiny.num_classes = 2  # pretend: the hook refuses before any work
    with pytest.raises(AttackNotApplicable):
        D.run_attack(tiny, case, {"name": "apgd-dlr", "eps": 0.1, "steps": 1}, MsdParams())


def _parse(argv):
    from napari_segeval.cli import _attack

    parser = argparse.ArgumentParser()
    _attack.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["attack", *argv])


@pytest.mark.parametrize("attack", ["square", "fab"])
def test_segeval_attack_runs_square_and_fab(tiny_ct_files, tiny_dense_weights, capsys, attack):
    from napari_segeval.cli import _attack

    d, _, _ = tiny_ct_files
    out = d / f"out_{attack}"
    argv = [
        str(d / "ct.nii.gz"),
        "--labels",
        str(d / "seg.nii.gz"),
        "--model",
        str(tiny_dense_weights),
        "--output-dir",
        str(out),
        "--device",
        "cpu",
        "--attack",
        attack,
        "--eps",
        "0.2",
        "--steps",
        "2",
        "--json",
    ]
    if attack == "square":
        argv += ["--schedule", "absolute", "--loss", "hard-dice"]
    assert _attack.run(_parse(argv)) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["attack"]["attack"] == attack
    assert payload["perturbation_norm"]["normalized"] <= 0.2
    assert np.isfinite([r["dice"] for r in payload["attacked"]]).all()


def test_segeval_attack_refuses_options_of_another_attack(tiny_ct_files, tiny_dense_weights):
    from napari_segeval.cli import _attack

    d, _, _ = tiny_ct_files
    argv = [
        str(d / "ct.nii.gz"),
        "--labels",
        str(d / "seg.nii.gz"),
        "--model",
        str(tiny_dense_weights),
        "--output-dir",
        str(d / "o"),
        "--device",
        "cpu",
        "--attack",
        "pgd",
        "--eps",
        "0.2",
        "--schedule",
        "rog",
    ]
    with pytest.raises(SegEvalError, match="does not apply to pgd"):
        _attack.run(_parse(argv))
