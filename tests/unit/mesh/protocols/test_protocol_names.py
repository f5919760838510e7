"""A protocol's name is checked in one place (``protocols.check``), with one kind of error."""

from __future__ import annotations

import pytest

from gaiamesh.errors import exit_code, label
from gaiamesh.mesh.protocols import UnknownProtocol, available, check, get_adapter


def test_every_registered_name_passes_and_any_other_is_an_unknown_protocol() -> None:
    for name in available():
        assert check(name) == name
    with pytest.raises(UnknownProtocol, match="unknown protocol 'carrier-pigeon'; available: a2a, ") as caught:
        check("carrier-pigeon")
    assert (exit_code(caught.value), label(caught.value), caught.value.status) == (2, "bad configuration", 422)


def test_building_an_adapter_checks_the_name_the_same_way() -> None:
    with pytest.raises(UnknownProtocol, match="unknown protocol 'carrier-pigeon'"):
        get_adapter("carrier-pigeon")
    assert get_adapter("json").name == "json"
