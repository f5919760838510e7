#!/usr/bin/env bash
# The user every container runs as, never root: the host user's own uid:gid (so files written
# into bind-mounted folders stay theirs), or 10001:10001 when the host user is root.
#   scripts/owner.sh            print it (GAIAMESH_USER, when set, wins)
#   scripts/owner.sh PATH...    make PATHs that user's (only needed, and only done, as root)
set -euo pipefail
if [ -n "${GAIAMESH_USER:-}" ]; then owner="$GAIAMESH_USER"
elif [ "$(id -u)" = 0 ]; then owner=10001:10001
else owner="$(id -u):$(id -g)"; fi
if [ $# -eq 0 ]; then echo "$owner"; exit 0; fi
if [ "$(id -u)" = 0 ]; then chown -R "$owner" "$@"; fi
