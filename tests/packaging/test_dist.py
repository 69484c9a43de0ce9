"""The release archives, as a user of the package index gets them.

Release checks (``scripts/test.sh --release``, run by CI after the README's command): one
builds the sdist and, from it, the wheel (``python -m build``), installs the wheel in a fresh
virtual environment and runs the README's wheel-user commands outside the source tree;
another unpacks the sdist and runs the suite's fast tier from it.

The fresh environment gets the wheel without resolving its dependencies again: they are
the test environment's, seen through a ``.pth`` line (a path line: the editable install's
own ``.pth`` finder is not processed there), and ``pip check`` proves the wheel's
requirements are met by them. What is under test is the wheel: its files, its entry
point, its package data, its metadata.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.release

ROOT = Path(__file__).resolve().parents[2]
#: The README's block of wheel-user commands (a shell code block between these markers).
BEGIN, END = "<!-- wheel-user commands -->", "<!-- /wheel-user commands -->"


def _run(cmd, cwd: Path, env: dict | None = None, timeout: float = 1800) -> str:
    out = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        shell=isinstance(cmd, str),
        executable="/bin/bash" if isinstance(cmd, str) else None,
    )
    assert out.returncode == 0, (
        f"{cmd} exited {out.returncode}\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    )
    return out.stdout


def wheel_user_commands(readme: str) -> list[str]:
    """The shell commands of the README's wheel-user block, installs left out (the wheel
    under test is installed already); a command continued with ``\\`` is one command.

    Examples
    --------
    >>> wheel_user_commands('<!-- wheel-user commands -->\\n```bash\\npip install x\\n'
    ...                     '# a comment\\nsegeval samples\\nsegeval a \\\\\\n  b\\n```\\n'
    ...                     '<!-- /wheel-user commands -->')
    ['segeval samples', 'segeval a b']
    """
    if BEGIN not in readme or END not in readme:
        raise AssertionError(f"README.md has no wheel-user block ({BEGIN} ... {END})")
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    text = re.sub(r"\\\n\s*", "", block)
    lines = [ln.strip() for ln in text.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith(("```", "#", "pip install"))]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel built from it (setuptools of this environment: no index)."""
    out = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], cwd=out
    )
    (sdist,), (wheel,) = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    return {"sdist": sdist, "wheel": wheel}


def _tracked(*folders: str) -> set[str]:
    text = _run(["git", "ls-files", *folders], cwd=ROOT)
    return {p for p in text.splitlines() if (ROOT / p).is_file()}


def test_the_archives_hold_a_complete_release(dists):
    with zipfile.ZipFile(dists["wheel"]) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: BSD-3-Clause" in meta and "Project-URL: Source" in meta
    assert "napari_segeval/napari.yaml" in names
    # the lazy exports' stubs and the PEP 561 marker: type checkers see the API
    assert {"napari_segeval/__init__.pyi", "napari_segeval/attacks/__init__.pyi"} <= set(names)
    assert "napari_segeval/py.typed" in names
    assert not any(n.startswith(("tests/", "sample_data/")) for n in names)
    with tarfile.open(dists["sdist"]) as t:
        top = t.getnames()[0].split("/")[0]
        held = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files to compare with")
    wanted = _tracked(
        "napari_segeval", "tests", "sample_data", "scripts", "benchmarks", "examples", "docs"
    ) | {"LICENSE", "README.md", "pyproject.toml"}
    assert not sorted(wanted - held), f"missing from {top}"


def test_the_wheel_works_outside_the_source_tree(dists, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    py = venv / "bin" / "python"
    site = Path(
        _run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp_path,
        ).strip()
    )
    (site / "_segeval_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    user = tmp_path / "user"
    user.mkdir()
    # a user's environment: no PYTHONPATH (a checkout on it would make pip find the package
    # installed already, and install nothing), no SEGEVAL_ settings
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SEGEVAL_"))}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        HOME=str(tmp_path),
    )
    _run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(dists["wheel"])],
        cwd=tmp_path,
        env=env,
    )
    # the wheel's requirements are met (other packages of the test environment may not
    # be: the weights-only installs of scripts/test.sh leave out their network code)
    check = subprocess.run([str(py), "-m", "pip", "check"], capture_output=True, text=True, env=env)
    assert not [ln for ln in check.stdout.splitlines() if ln.startswith("napari-segeval ")], (
        check.stdout
    )
    where = _run(
        [str(py), "-c", "import napari_segeval; print(napari_segeval.__file__)"], cwd=user, env=env
    )
    assert Path(where.strip()).is_relative_to(site), where
    _run([str(py), "-m", "npe2", "validate", "napari-segeval"], cwd=user, env=env)
    samples = json.loads(_run("segeval samples --json", cwd=user, env=env))
    assert Path(samples["root"]).is_relative_to(tmp_path / "cache")
    commands = wheel_user_commands((ROOT / "README.md").read_text())
    assert any("segeval samples path" in c for c in commands)
    for command in commands:
        _run(command, cwd=user, env=env)


def test_the_fast_tier_runs_from_the_sdist(dists, tmp_path):
    with tarfile.open(dists["sdist"]) as t:
        t.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    (src,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    env.pop("SEGEVAL_SAMPLE_DATA", None)
    where = _run(
        [sys.executable, "-c", "import napari_segeval; print(napari_segeval.__file__)"],
        cwd=src,
        env=env,
    )
    assert Path(where.strip()).is_relative_to(src), where  # the sdist's code, not the checkout's
    workers = "2" if (os.cpu_count() or 1) > 1 else "0"
    out = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            workers,
            "-m",
            "not slow and not release and not heavy",
            "-x",
            "tests",
            "napari_segeval",
        ],
        cwd=src,
        env=env,
        timeout=3600,
    )
    assert re.search(r"\d+ passed", out) and " failed" not in out, out[-2000:]
