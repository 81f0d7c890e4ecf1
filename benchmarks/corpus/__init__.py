"""Building the corpus and its first index: cold and incremental builds, dedupe, GitHub
rate limits, the CPU default and the GPU embedding stage."""
