"""The project's benchmarks: scripts that measure the installed ``codegen`` package and print
JSON figures, grouped by what they measure. Each runs from the repository root as
``python -m benchmarks.<group>.<script>``; ``results_page`` writes docs/results.md from the
JSON stored under ``results/``.

- ``common``: what several scripts share (paths, the machine, the replay server, ClassEval's
  held-out tasks)
- ``pick``: choosing one of several candidates (the crew's pick, offline and by replay)
- ``scoring``: scoring samples in the sandbox against published verdicts and tables
- ``verdicts``: attacks on where a verdict is decided, run against a given tree (issue 46)
- ``crew``: the whole crew end to end (replayed, scripted) and its overhead
- ``corpus``: building the corpus and its index
- ``retrieval``: embedders, vector indexes and retrieval quality
- ``deploy``: the containerized deployment under load
"""
