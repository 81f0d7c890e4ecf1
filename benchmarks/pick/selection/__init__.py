"""Picking one of N candidates by execution on recorded samples: ``python -m
benchmarks.pick.selection`` (its ``__main__`` says what it prints); ``tasks`` loads them,
``execution`` runs them in the sandbox, ``rules`` are the picks compared."""
