"""The protocol and strategy comparison (``gaiamesh bench``, ``report``, ``bench-compose``): its runs, their order,
what the summary says of its fairness, the single-call baseline."""
