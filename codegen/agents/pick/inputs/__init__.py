"""The shared inputs every draft of a task is run on, for the pick to compare: argument lists
for functions (seeds from examples, prose, tests and signatures, then type-aware mutation),
call sequences on a fresh instance for classes, and input streams for programs (worked
examples, then format-keeping mutations)."""

from codegen.agents.pick.inputs.functions import CallInput, InputBudget, call_sites, inputs_for
from codegen.agents.pick.inputs.seeds import assigned_values, bracket_end, params_of, stated_bounds
from codegen.agents.pick.inputs.sequence_seeds import CallSequence, Step
from codegen.agents.pick.inputs.sequences import class_sequences, columns, run_sequences
from codegen.agents.pick.inputs.streams import StreamBudget, StreamInput, stream_inputs

__all__ = [
    "CallInput",
    "CallSequence",
    "InputBudget",
    "Step",
    "StreamBudget",
    "StreamInput",
    "assigned_values",
    "bracket_end",
    "call_sites",
    "class_sequences",
    "columns",
    "inputs_for",
    "params_of",
    "run_sequences",
    "stated_bounds",
    "stream_inputs",
]
