"""The whole crew end to end: replayed from recorded replies, against a scripted endpoint,
and the overhead a request spends outside model calls."""
