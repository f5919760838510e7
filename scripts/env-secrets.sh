#!/usr/bin/env bash
# Make sure .env exists and holds the network service's and the mesh's secrets; generate random ones when they
# are missing or empty. Prints nothing when both are already set.
set -euo pipefail
env_file="${1:-.env}"
[ -f "$env_file" ] || { cp .env.example "$env_file"; echo "created $env_file from .env.example"; }
for name in GAIAMESH_ACCESS_KEY GAIAMESH_SESSION_SECRET GAIAMESH_MESH_TOKEN; do
  if ! grep -Eq "^${name}=.+" "$env_file"; then
    value=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
    if grep -Eq "^${name}=" "$env_file"; then
      sed -i "s|^${name}=.*|${name}=${value}|" "$env_file"
    else
      printf '%s=%s\n' "$name" "$value" >> "$env_file"
    fi
    echo "wrote a random ${name} into $env_file"
  fi
done
# The non-root user the containers run as, so that plain `docker compose up` uses it too.
if ! grep -Eq "^GAIAMESH_USER=.+" "$env_file"; then
  owner=$("$(dirname "$0")/owner.sh")
  if grep -Eq "^GAIAMESH_USER=" "$env_file"; then
    sed -i "s|^GAIAMESH_USER=.*|GAIAMESH_USER=${owner}|" "$env_file"
  else
    printf 'GAIAMESH_USER=%s\n' "$owner" >> "$env_file"
  fi
  echo "wrote GAIAMESH_USER=${owner} (the containers' user) into $env_file"
fi
chmod 600 "$env_file"
