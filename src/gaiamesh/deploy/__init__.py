"""Deployments beyond one compose project: the swarm stack derived from ``compose.yaml``."""
