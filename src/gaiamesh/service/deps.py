"""What every route of the API and the page is given: the service the app runs, and who is
calling (FastAPI dependencies, read from the app and the request)."""

# No `from __future__ import annotations`: FastAPI resolves the dependencies' annotations.
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from ..errors import Forbidden
from .auth import Principal, credential, cross_site
from .service import MeshService

bearer = HTTPBearer(auto_error=False)


def get_service(conn: HTTPConnection) -> MeshService:
    """The app's one :class:`MeshService` (built when the app starts)."""
    service: MeshService = conn.app.state.service
    return service


Svc = Annotated[MeshService, Depends(get_service)]


def principal(
    conn: HTTPConnection, svc: Svc, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Principal:
    """The caller: ``creds`` only documents the bearer scheme in the schema; ``credential``
    reads it again, then the page's login cookie, then ``?key=``."""
    value, from_cookie = credential(conn)
    if from_cookie and cross_site(conn):
        raise Forbidden("refused: the login cookie does not act for another site's page")
    return svc.authority.principal(value)  # an AuthError: 401 with its WWW-Authenticate (service.app)


Who = Annotated[Principal, Depends(principal)]
