"""Running cases: the task protocol (``task``), the isolated worker (``isolation``, ``worker``),
the references (``references``) and the runner that ties them to the oracles (``runner``)."""
