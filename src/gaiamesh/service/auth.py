"""Who is calling: the holder of the access key (everything), or a session (its own things).

The access key works like Jupyter's token: a random secret from ``.env`` given as a bearer
token or as ``?key=``. A session token is an HS256 JWT (PyJWT) naming one session, with an
expiry, signed with the service's secret.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import jwt
from starlette.requests import HTTPConnection

from ..errors import ConfigError, Unauthorized

COOKIE = "gaiamesh_login"  # the page's login token (HttpOnly, SameSite=Strict)
ALGORITHM = "HS256"
SCOPE = "session"
LOGIN_SCOPE = "login"


class AuthError(Unauthorized):
    """Missing, forged or expired credentials (the message says which); the answer names the
    scheme a client authenticates with, as a 401 must."""

    headers: ClassVar[Mapping[str, str]] = {"WWW-Authenticate": "Bearer"}


@dataclass(frozen=True)
class Principal:
    """The caller: ``session_id`` is None for the access key's holder."""

    session_id: str | None

    @property
    def is_admin(self) -> bool:
        return self.session_id is None

    def may_see(self, session_id: str | None) -> bool:
        return self.is_admin or (session_id is not None and session_id == self.session_id)


class Authority:
    """Checks access keys and issues and checks session tokens."""

    def __init__(self, access_key: str, secret: str, ttl: float) -> None:
        if not access_key:
            raise ConfigError("GAIAMESH_ACCESS_KEY is empty: the service needs an access key (make setup writes one)")
        if len(secret) < 32:
            raise ConfigError("GAIAMESH_SESSION_SECRET must be at least 32 characters (make setup writes one)")
        self._key = access_key.encode()
        self._secret = secret
        self.ttl = ttl

    def issue(self, session_id: str) -> tuple[str, float]:
        """A token for ``session_id`` and the time it expires."""
        now = time.time()
        exp = now + self.ttl
        claims = {"sub": session_id, "scope": SCOPE, "iat": int(now), "exp": int(exp)}
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM), float(int(exp))

    def issue_login(self) -> tuple[str, float]:
        """A login token for the page (the access key's holder), and the time it expires."""
        now = time.time()
        exp = int(now + self.ttl)
        claims = {"sub": "", "scope": LOGIN_SCOPE, "iat": int(now), "exp": exp}
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM), float(exp)

    def is_key(self, credential: str | None) -> bool:
        """Whether ``credential`` is the access key itself (compared in constant time)."""
        return bool(credential) and hmac.compare_digest(str(credential).encode(), self._key)

    def principal(self, credential: str | None) -> Principal:
        """The caller behind a bearer credential; raises :class:`AuthError` saying what is wrong."""
        if not credential:
            raise AuthError("no credentials: send 'Authorization: Bearer <access key or session token>'")
        if self.is_key(credential):
            return Principal(None)
        try:
            claims = jwt.decode(
                credential, self._secret, algorithms=[ALGORITHM], options={"require": ["exp", "sub", "scope"]}
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthError("session token expired: start a new session") from exc
        except jwt.InvalidSignatureError as exc:
            raise AuthError(
                "session token signature is invalid: this service did not issue it (or its "
                "GAIAMESH_SESSION_SECRET changed since); start a new session"
            ) from exc
        except jwt.InvalidTokenError as exc:
            # The library's own words ("Not enough segments") say nothing to a user: say what to send.
            raise AuthError(
                "not an access key or a valid session token: send GAIAMESH_ACCESS_KEY from .env "
                "(or a token this service issued for a session) as 'Authorization: Bearer ...'"
            ) from exc
        if claims.get("scope") == LOGIN_SCOPE:
            return Principal(None)
        if claims.get("scope") != SCOPE:
            raise AuthError(f"token scope {claims.get('scope')!r} is not {SCOPE!r}")
        return Principal(str(claims["sub"]))


def credential(request: HTTPConnection) -> tuple[str | None, bool]:
    """The caller's credential and whether it came from the login cookie: a bearer header
    first (programs), then the cookie (the page), then ``?key=``/``?token=``."""
    header = request.headers.get("authorization", "")
    if header.startswith("Bearer ") and header[7:].strip():
        return header[7:].strip(), False
    if cookie := request.cookies.get(COOKIE):
        return cookie, True
    return request.query_params.get("key") or request.query_params.get("token"), False


def cross_site(request: HTTPConnection) -> bool:
    """A browser request sent from another site's page (the Origin does not match the Host):
    the cookie must not act for it, whatever SameSite the browser honours."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin == "null"
    return origin.split("://", 1)[-1] != request.headers.get("host", "")
