#!/bin/sh
# Start the node's engine. It listens on its socket and on TCP 2375 of the cluster's private
# network only (no TLS: the network is the test cluster's own, not published on the host).
# INSECURE_REGISTRIES: plain-HTTP registries the engine may pull from (the cluster's subnet).
set -e
# --tls=false said outright: dockerd otherwise waits 15 s at start to show a warning about it.
set -- --host unix:///var/run/docker.sock --host tcp://0.0.0.0:2375 --tls=false \
  --storage-driver "${STORAGE_DRIVER:-fuse-overlayfs}" --log-level "${LOG_LEVEL:-warn}" "$@"
for reg in $(echo "${INSECURE_REGISTRIES:-}" | tr ',' ' '); do
  set -- "$@" --insecure-registry "$reg"
done
exec dockerd "$@"
