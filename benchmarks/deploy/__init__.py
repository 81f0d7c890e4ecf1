"""The containerized deployment under a burst of requests and injected faults."""
