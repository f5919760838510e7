"""ANP's floor: the ``anp`` SDK alone, as its own examples use it (``examples/python/
minimal_example`` and FastANP's README "Adding Auth Middleware").

Server: a ``FastANP`` app with one ``echo`` interface (its JSON-RPC endpoint ``/rpc``) and the
SDK's auth middleware, a ``DidWbaVerifierConfig`` with the RS256 JWT keys the README shows, so
that the first request is checked by DID-WBA (the client's DID document resolved over HTTPS by
the SDK's resolver) and the next ones by the Bearer token it hands back. Client: the SDK's
``ANPClient(did_document_path, private_key_path).call_jsonrpc(...)``, which makes an
``aiohttp.ClientSession`` for each call: a new connection per request, by the SDK's design.

Both sides use the same identity as ours: the relay's did:wba document and key, published by the
relay's DID host (``mesh/protocols/anp/didhost.py``), which the bench runs for both; the server
process trusts the host's local CA through ``SSL_CERT_FILE``, as an agent does.
"""

# No ``from __future__ import annotations``: FastANP reads the interface's annotations at run time.

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp

from ...errors import RunError
from ...mesh.frames import NETWORK_SRC

ECHO = "echo"
RPC = "/rpc"  # FastANP's default JSON-RPC path (and our binding's, mesh/protocols/anp/did.py)
Send = Any  # floor.Send (not imported: floor imports this module)


def _rsa_pair() -> tuple[str, str]:
    """The verifier's JWT keys, RS256 as the README's example (a new pair per server)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, public


def anp_app(public_url: str) -> ASGIApp:
    from anp.authentication import DidWbaVerifierConfig
    from anp.fastanp import FastANP

    private, public = _rsa_pair()
    anp = FastANP(
        name=ECHO,
        description="echoes its packet",
        did=f"did:wba:localhost:{ECHO}",  # the server's own DID: named in its description only
        agent_domain="localhost",
        jsonrpc_server_path=RPC,
        auth_config=DidWbaVerifierConfig(jwt_private_key=private, jwt_public_key=public, jwt_algorithm="RS256"),
    )

    def echo(packet: dict[str, Any]) -> dict[str, Any]:  # the SDK reads these annotations
        """Echo the packet."""
        return {"packet": packet}

    anp.interface(f"/info/{ECHO}.json", description="echo the packet")(echo)
    made: ASGIApp = anp.app
    return made


@asynccontextmanager
async def anp_client(url: str, keys_dir: Path) -> AsyncIterator[Send]:
    """The SDK's ``ANPClient`` signing as the relay (its published document and key)."""
    from anp import ANPClient

    from ...mesh.protocols.anp.did import relay_document_path  # loads the SDK: here, not at import

    client = ANPClient(
        did_document_path=str(relay_document_path(keys_dir)),
        private_key_path=str(keys_dir / f"{NETWORK_SRC}.pem"),
    )
    if client.auth_client is None:  # the SDK logs its error and goes on unauthenticated
        raise RunError(f"anp floor: the SDK's ANPClient could not read the relay's identity in {keys_dir}")

    async def send(blob: bytes) -> int:
        got = await client.call_jsonrpc(f"{url}{RPC}", ECHO, {"packet": json.loads(blob)}, str(uuid.uuid4()))
        if not got.get("success"):
            raise RunError(f"anp floor: {str(got.get('error'))[:300]}")
        return len(json.dumps(got["result"]))

    yield send
