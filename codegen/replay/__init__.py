"""Record and replay model traffic: recordings, an OpenAI-compatible replay server, and
importers for the public HumanEval generation formats. No Dagster imports."""
