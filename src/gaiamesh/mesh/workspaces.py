"""An agent's run workspace, for the relay that archives it, wherever the agent runs.

On one host the relay reads each agent's ``workspaces/<node_id>/<run_id>/`` where it lies
(compose mounts them all into the network service). On a swarm an agent's workspace is a volume
on the node that runs it, so the agent serves it on its own port, ``GET /runs/<run_id>/workspace``,
as a tar.gz, and the relay fetches it when the run ends. The request is signed with the relay's
Ed25519 key and checked against ``public.json`` (the keys the ``signed`` protocol already has):
no new secret, and only the relay reads an agent's files.

This module is pure (signing, checking, packing, unpacking); the agent and the relay move the bytes.
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..errors import Invalid, NotFound, TooLarge, Unauthorized

SCHEME = "GaiaMesh-Ed25519"
SIGNER = "network"  # the relay's node id in public.json
WINDOW_S = 60.0  # a signed request is good this long either side of its time: a copied one expires
MAX_BYTES = 64 * 1024 * 1024  # one run's workspace, unpacked; more is refused rather than filled in
_PATH = re.compile(r"/runs/([A-Za-z0-9_-]{1,64})/workspace")


def run_of(path: str) -> str | None:
    """The run id a request path asks for, or None if it is not a workspace request."""
    found = _PATH.fullmatch(path)
    return found.group(1) if found else None


def _claim(node_id: str, run_id: str, ts: int) -> bytes:
    return f"gaiamesh-workspace\n{node_id}\n{run_id}\n{ts}".encode()


def sign(key: Ed25519PrivateKey, node_id: str, run_id: str, now: float) -> str:
    """The ``Authorization`` value asking agent ``node_id`` for run ``run_id``'s workspace."""
    ts = int(now)
    return f"{SCHEME} {ts} {key.sign(_claim(node_id, run_id, ts)).hex()}"


def check(header: str | None, relay: Ed25519PublicKey | None, node_id: str, run_id: str, now: float) -> None:
    """Raise :class:`Unauthorized` unless ``header`` is the relay's signature of this request,
    made within :data:`WINDOW_S` of ``now``."""
    if relay is None:
        raise Unauthorized(f"agent {node_id} has no public key of {SIGNER!r} to check the request with")
    parts = (header or "").split()
    if len(parts) != 3 or parts[0] != SCHEME or not parts[1].isdigit():
        raise Unauthorized(f"a workspace request needs 'Authorization: {SCHEME} <time> <signature>'")
    ts = int(parts[1])
    if abs(now - ts) > WINDOW_S:
        raise Unauthorized(f"the request was signed {abs(now - ts):.0f} s away from this agent's clock "
                           f"(more than {WINDOW_S:.0f} s)")
    try:
        relay.verify(bytes.fromhex(parts[2]), _claim(node_id, run_id, ts))
    except (InvalidSignature, ValueError) as exc:
        raise Unauthorized("the request's signature is not the relay's") from exc


def pack(folder: Path, limit: int = MAX_BYTES) -> bytes:
    """``folder``'s files and folders as a tar.gz; links and devices are left out, never followed."""
    if not folder.is_dir():
        raise NotFound(f"no workspace for this run in {folder.parent}")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    if size > limit:
        raise TooLarge(f"the run's workspace holds {size} bytes (more than {limit})")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=".", recursive=True, filter=_plain)
    return buf.getvalue()


def _plain(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return member if member.isfile() or member.isdir() else None


def unpack(blob: bytes, dest: Path, limit: int = MAX_BYTES) -> None:
    """Unpack what :func:`pack` made into ``dest``: files and folders only, each inside ``dest``
    (no absolute path, no ``..``). Written out by hand, not with tar's ``data`` filter, which the
    images' Python (Debian's 3.11.2) does not have."""
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            members = tar.getmembers()
            if sum(m.size for m in members) > limit:
                raise TooLarge(f"the workspace sent unpacks to more than {limit} bytes")
            dest.mkdir(parents=True, exist_ok=True)
            for member in members:
                _extract(tar, member, _inside(dest, member))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise Invalid(f"the workspace sent is not a readable tar.gz: {exc}") from exc


def _inside(dest: Path, member: tarfile.TarInfo) -> Path:
    parts = PurePosixPath(member.name).parts
    if PurePosixPath(member.name).is_absolute() or ".." in parts:
        raise Invalid(f"the workspace sent names {member.name!r}, outside its folder")
    if not (member.isfile() or member.isdir()):
        raise Invalid(f"the workspace sent holds {member.name!r}, which is not a file or a folder")
    return dest.joinpath(*(p for p in parts if p != "."))


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    if member.isdir():
        target.mkdir(parents=True, exist_ok=True)
        return
    source = tar.extractfile(member)
    if source is None:
        raise Invalid(f"the workspace sent has no data for {member.name!r}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with source, target.open("wb") as out:
        shutil.copyfileobj(source, out)
