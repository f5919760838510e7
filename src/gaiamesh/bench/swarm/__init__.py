"""A deployed swarm stack: runs at more replicas, round trips same-node against cross-node."""
