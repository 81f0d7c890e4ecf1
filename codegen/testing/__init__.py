"""Test doubles shared by the tests and the benchmarks: loopback servers that speak the corpus
sources' wire shapes, and a scripted crew model for HumanEval runs.

Nothing in the product imports this package (``tests/test_imports.py`` fails if anything
does); it ships in the wheel only so that benchmarks, which import the installed package
alone, can use the same doubles as the tests.
"""
