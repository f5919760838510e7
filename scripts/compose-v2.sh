#!/usr/bin/env bash
# Ensure `docker compose` (Compose v2, which testcontainers needs) is available.
# Debian bookworm only packages Compose v1; Compose v2 (a static Go binary, depending on
# libc6 only) is taken from Debian trixie's docker-compose package.
set -euo pipefail
if docker compose version 2>/dev/null | grep -Eq 'version v?2\.'; then
  docker compose version; exit 0
fi
echo "Compose v2 missing; installing docker-compose 2.x from Debian trixie ..."
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
cat > "$work/trixie.sources" <<SRC
Types: deb
URIs: ${DEBIAN_MIRROR:-http://deb.debian.org/debian}
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
apt_opts=(-o "Dir::Etc::sourcelist=$work/trixie.sources" -o "Dir::Etc::sourceparts=-"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" update -qq
(cd "$work" && apt-get "${apt_opts[@]}" download docker-compose docker-buildx)
dpkg -i "$work"/docker-compose_2*.deb "$work"/docker-buildx_*.deb
docker compose version
