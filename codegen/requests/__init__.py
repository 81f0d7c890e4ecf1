"""A request's life outside the crew: the store, the inbox, human review."""
