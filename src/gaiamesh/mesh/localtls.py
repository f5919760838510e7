"""A local certificate authority: the certificates of anp's DID host (below) and of every node
on the relay's wire (``WIRE_TLS``, ``wiretls.py``), made by ``make keys``, never by a public CA.

ANP's SDK resolves a did:wba document over ``https://`` and nothing else (``anp`` 1.0.7,
``resolve_did_wba_document``: the scheme is written into the URL and the request passes
``ssl=True``). So the relay's DID host serves TLS with a certificate from a CA made here, for
host *names* (did:wba names a host, not an IP), and each process that resolves trusts that CA
through ``SSL_CERT_FILE`` naming :attr:`TlsFiles.trust`, set in its environment before it starts:
aiohttp builds its verifying context once, when it is imported, from the environment's
trust paths, and the SDK offers no way to hand it another.

The relay's wire: each node named at issue (``network``, ``0``, ``1``, ...) gets a certificate
whose identity is its node id (the subject's common name and the URI ``urn:gaiamesh:node:<id>``),
good for both ends of a TLS connection, in ``tls-<id>.pem`` with its private key (mode 0600).
The relay checks the node id, not a host name: the same agent is 127.0.0.1 locally, agent-search
under compose and a DNS entry on a swarm.

The CA's private key is never written: once the certificates are signed nobody can issue
another, so trusting the CA trusts those certificates only (a new node means new keys).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import certifi
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA's certificate
    cert: Path  # the server's certificate, for uvicorn's ssl_certfile
    key: Path  # the server's private key (mode 0600), for uvicorn's ssl_keyfile
    trust: Path  # certifi's roots and the CA: what SSL_CERT_FILE names in a resolving process


NODE_URI = "urn:gaiamesh:node:"  # + node id: a wire certificate's identity (wiretls.py reads it)


def node_cert_file(directory: Path, node_id: str) -> Path:
    """The file holding node ``node_id``'s wire certificate and its private key."""
    return directory / f"tls-{node_id}.pem"


_CA_USAGE = x509.KeyUsage(
    digital_signature=False,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # a peer's clock a little behind
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
    )


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _node_cert(node_id: str, ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, days: int) -> bytes:
    """Node ``node_id``'s private key and wire certificate, as one PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_name(node_id), ca_name, key.public_key(), days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(NODE_URI + node_id)]),
                       critical=False)  # fmt: skip
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)  # fmt: skip
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem + cert.public_bytes(serialization.Encoding.PEM)


def issue_tls(directory: Path, hosts: Sequence[str], days: int = 365, nodes: Sequence[str] = ()) -> TlsFiles:
    """A new CA and one server certificate for ``hosts`` (names, e.g. ``localhost`` and the
    relay's service name), written to ``directory`` as ``local-ca.pem``, ``local-tls.pem``,
    ``local-tls-key.pem`` and ``local-trust.pem``; and a wire certificate for each of ``nodes``
    (:func:`node_cert_file`)."""
    if not hosts:
        raise ValueError("a server certificate needs at least one host name")
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gaiamesh local CA")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_USAGE, critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        _builder(_name(hosts[0]), ca_name, key.public_key(), days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(
        directory / "local-ca.pem",
        directory / "local-tls.pem",
        directory / "local-tls-key.pem",
        directory / "local-trust.pem",
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    files.ca.write_bytes(ca_pem)
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(
        files.key,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    # The usual roots stay trusted beside the CA: SSL_CERT_FILE replaces the default bundle
    # for every client in that process (httpx reads it too), and agents may call real HTTPS.
    files.trust.write_bytes(Path(certifi.where()).read_bytes().rstrip(b"\n") + b"\n" + ca_pem)
    for node in nodes:
        _write_private(node_cert_file(directory, node), _node_cert(node, ca_key, ca_name, days))
    return files
