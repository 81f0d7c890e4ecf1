"""Embedders, vector indexes and retrieval: quality, speed, the embedding ceiling and the
indexes at scale."""
