#!/usr/bin/env bash
# Install napari-segeval with its test extras into .venv and run the whole test suite,
# GUI tests included (under Xvfb, started by pytest-xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
$py -m pip install -q --upgrade pip
$py -m pip install -q -e ".[testing,bench,medsam2]"
# The MedSAM2 reference (Meta's SAM2) for the parity test: model code only, no CUDA
# extension, and no dependency resolution that could swap the CPU torch for another build.
if ! $py -c "import sam2" 2>/dev/null; then
  SAM2_BUILD_CUDA=0 $py -m pip install -q --no-deps --no-build-isolation sam2 || \
    echo "test.sh: could not install sam2; the MedSAM2 parity test will be skipped" >&2
fi
exec $py -m pytest "$@"
