"""Parameter and FLOP counting for attention models: closed forms, meta-device counts, dispatch counts.

The library API (every function returns data):

- ``formulas``: sympy closed forms per module kind (``linear``, ``attention_projections``,
  ``attention_scores``, ``attention_values``, ``multi_head_attention``, ``feed_forward``,
  ``layer_norm``, ``embedding``, ...), each a ``Cost(params, flops, other)`` in the
  config symbols ``h d_model d_k d_v d_ff vocab max_seq segments B S`` (``SYMBOLS``),
  with their sources (audit's expected counts).
- ``params``: ``on_meta(factory)`` builds a module without allocating weights;
  ``count_parameters``, ``tied_parameters``, ``assign_parameters`` (shared tensors once).
- ``dispatch``: ``count_flops(run, root)`` counts every aten op of a forward pass with
  its module (FlopCounterMode's formulas plus ours for every attention op it lacks) and
  lists ops that did arithmetic without a formula as ``uncounted``;
  ``flop_counter_mapping()`` plugs our formulas into ``FlopCounterMode``.
- ``tree``: ``model_report(module, name, settings)``, the report of any model: a row per module of
  its tree, measured, with the closed form (``closed_forms``) of each part ``anatomy`` recognises;
  ``symbolic.interpolated`` turns it into polynomials in a named sequence length; ``feed`` says how
  a model is called. The built-in kinds and presets are built by ``shapecheck.report`` and go the same way.
"""

from shapecheck.counting.dispatch import DispatchCount, OpRecord, count_flops, flop_counter_mapping
from shapecheck.counting.formulas import SYMBOLS, Cost
from shapecheck.counting.params import assign_parameters, count_parameters, on_meta, tied_parameters

__all__ = [
    "Cost",
    "DispatchCount",
    "OpRecord",
    "SYMBOLS",
    "assign_parameters",
    "count_flops",
    "count_parameters",
    "flop_counter_mapping",
    "on_meta",
    "tied_parameters",
]
