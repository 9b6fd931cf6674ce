"""The Python stages of the ``cpu-vector`` target (its stage list is in ``compiler.pipelines``).

- ``vecmath``: vectorizable polynomial exp / log / tanh (the ``vecmath`` stage);
- ``fusion``: reshapes as views (``views``), softmax / layer-norm row groups;
- ``schedule``: the transform-dialect schedules written into the module (``rows-planned``,
  ``vector-planned``), applied by the following pass stage;
- ``gathers``: gathers from strided buffers through their strides (``gathers``);
- ``memory``: hoisted loop allocations and static temporaries as globals (``temporaries``).

Every module imports MLIR only inside functions; none imports the rest of the compiler.
"""
