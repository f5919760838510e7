"""``gaiamesh keygen``: new keys with the local CA, and the CA added to keys made before it."""

from __future__ import annotations

from pathlib import Path

from gaiamesh.cli import main
from gaiamesh.cli.upkeep import TLS_FILES
from gaiamesh.mesh.protocols import generate_keys


def test_keygen_writes_keys_and_the_local_ca_beside_them(tmp_path: Path) -> None:
    assert main(["keygen", "--keys-dir", str(tmp_path), "--nodes", "network,0"]) == 0
    assert all((tmp_path / name).is_file() for name in ("network.pem", "0.pem", "public.json", *TLS_FILES))
    assert (tmp_path / "local-tls-key.pem").stat().st_mode & 0o077 == 0  # the private key is the owner's only


def test_keys_made_before_the_local_ca_get_it_and_keep_their_keys(tmp_path: Path) -> None:
    generate_keys(tmp_path, ["network", "0"])
    for name in TLS_FILES:  # as an install from before the native wire has them
        (tmp_path / name).unlink()
    (tmp_path / "local-trust.pem").mkdir()  # left by compose's bind mount of a file that was missing
    key = (tmp_path / "0.pem").read_bytes()
    assert main(["keygen", "--keys-dir", str(tmp_path), "--nodes", "network,0"]) == 0
    assert (tmp_path / "0.pem").read_bytes() == key  # the keys stay
    assert all((tmp_path / name).is_file() for name in TLS_FILES)
