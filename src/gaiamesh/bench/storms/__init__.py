"""Agents and links under stress: the fail-storm (local, on a compose stack, during a stream), network faults, a
frame flood."""
