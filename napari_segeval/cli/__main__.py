"""``python -m napari_segeval.cli``."""

import sys

from napari_segeval.cli import main

sys.exit(main())
