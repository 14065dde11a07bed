"""The one DeepSpeed call without a public form that the SFT recipe needs, in one place.

Under ZeRO-3 each rank holds a shard of every parameter, so the module's own `state_dict()` is
empty placeholders; the full 16-bit weights to save an HF checkpoint from are gathered by the
engine's `_zero3_consolidated_16bit_state_dict` (what its public `save_16bit_model` calls, which
only writes a `torch.save` file). tests/test_compat.py checks the method against the installed
DeepSpeed, so an upgrade that renames it fails there rather than after a training run.
"""

from __future__ import annotations

from typing import Any


def consolidated_state_dict(engine: Any) -> dict[str, Any] | None:
    """The full 16-bit state dict gathered from every rank (every rank must call this: it is a
    collective) when ZeRO-3 partitions the parameters; None otherwise, where the module's own
    state dict is complete."""
    if engine.zero_optimization_stage() != 3:
        return None
    return engine._zero3_consolidated_16bit_state_dict()
