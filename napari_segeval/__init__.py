"""napari-segeval: inspect and benchmark medical image segmentation, clean and attacked.

Importing this package is cheap: it never imports torch, Qt, napari, SimpleITK,
video decoders or Dask. Heavy libraries are imported inside the functions that
need them.

The Python API
--------------
The functions the ``segeval`` command runs, for notebooks and pipelines. Each is the
public function of its package, documented there. ``__init__.pyi`` imports them: type
checkers and the API pages read it, and :func:`lazy_loader.attach_stub` loads each
name from the module named there on first use (PEP 562), so ``import napari_segeval``
stays cheap.

========================  ==========================================================
read and write            :func:`read_case`, :func:`read_image`, :func:`read_labels`,
                          :func:`write_labels`, :func:`write_image`, :class:`Case`,
                          :class:`Geometry`
score                     :func:`structure_table` (Dice, IoU, precision, recall, HD95,
                          ASSD, NSD per structure), :func:`per_slice_dice`,
                          :func:`worst_slice`
prompt                    :class:`Box`, :class:`Point`, :class:`MaskPrompt`,
                          :class:`PromptSet`, :func:`boxes_from_labels`,
                          :class:`PromptFile`, :func:`read_prompts`,
                          :func:`write_prompts`
models                    :func:`load_promptable`, :func:`load_dense` (the names
                          ``segeval info`` lists)
propagate and segment     :func:`propagate_image`, :class:`PropagationOptions`,
                          :class:`PropagationSession` (corrections),
                          :func:`segment_case`
attack                    :data:`ATTACKS`, :class:`AttackConfig`,
                          :class:`PromptTarget`, :class:`DenseTarget`,
                          :func:`attack_case`, :func:`eps_from_raw`
evaluate                  :func:`load_layout` (the cases of a data-set folder),
                          :func:`run_evaluation`, :func:`write_report`
sample data               :func:`sample_path` (the bundled CT, MSD task, video ...)
========================  ==========================================================

Also here: the project exceptions (:class:`SegEvalError` and its subclasses, each
a message a person can act on), :class:`Cancelled` (raised by long jobs whose
cancel event was set) and ``__version__``.

Examples
--------
>>> import napari_segeval as se
>>> se.structure_table.__module__, se.load_promptable.__module__
('napari_segeval.metrics.table', 'napari_segeval.models.registry')
"""

import lazy_loader as _lazy

__version__ = "0.1.0"

# The Python API and the exceptions: the names __init__.pyi imports, each loaded from
# its module on first use (the exceptions too: importing them costs nothing either way).
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__all__ += ["__version__"]
