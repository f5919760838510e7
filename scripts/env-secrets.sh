#!/usr/bin/env bash
# Make sure .env exists and holds the network service's secrets; generate random ones when they
# are missing or empty. Prints nothing when both are already set.
set -euo pipefail
env_file="${1:-.env}"
[ -f "$env_file" ] || { cp .env.example "$env_file"; echo "created $env_file from .env.example"; }
for name in GAIAMESH_ACCESS_KEY GAIAMESH_SESSION_SECRET; do
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
chmod 600 "$env_file"
