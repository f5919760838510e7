#!/usr/bin/env bash
# Print the name of a usable base image, making one if needed (progress goes to stderr).
#   1. BASE_IMAGE (default python:3.11-slim-bookworm) if it is present or can be pulled;
#   2. otherwise (no registry, as on our CI and dev machines) a Debian bookworm root file
#      system with python3 built by mmdebstrap and `docker import`ed as gaiamesh-base:bookworm.
set -euo pipefail
WANTED="${BASE_IMAGE:-python:3.11-slim-bookworm}"
LOCAL="gaiamesh-base:bookworm"
say() { echo "base image: $*" >&2; }
for img in "$WANTED" "$LOCAL"; do
  if docker image inspect "$img" >/dev/null 2>&1; then say "$img present"; echo "$img"; exit 0; fi
done
if [ "${GAIAMESH_NO_PULL:-0}" != "1" ] && timeout 90 docker pull -q "$WANTED" >/dev/null 2>&1; then
  say "$WANTED pulled"; echo "$WANTED"; exit 0
fi
say "$WANTED cannot be pulled here; building $LOCAL with mmdebstrap (about 30-60 s) ..."
if ! command -v mmdebstrap >/dev/null; then
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >&2
fi
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# python3-venv for the service venvs, libstdc++6 for llama.cpp, ca-certificates for TLS.
mmdebstrap --variant=minbase --quiet \
  --include=python3,python3-venv,ca-certificates,libstdc++6 \
  --aptopt='APT::Install-Recommends "false"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/archives/*.deb' \
  bookworm - "$MIRROR" \
  | docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV LANG=C.UTF-8' \
      --change 'CMD ["python3"]' \
      - "$LOCAL" >/dev/null
say "$LOCAL built ($(docker image inspect -f '{{.Size}}' "$LOCAL" | numfmt --to=iec))"
echo "$LOCAL"
