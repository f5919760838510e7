"""MCP in relay mode: every frame read back with the ``mcp`` SDK's own types, and bad frames refused."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from mcp import types as sdk

from gaiamesh.mesh.frames import PacketType, parse_packet
from gaiamesh.mesh.protocols import ProtocolError, canonical_json, get_adapter


def packet(**kw: object) -> dict[str, Any]:
    base = {"type": "events", "run_id": "r1", "src": "1", "seq": 1, "tag": None, "question": "q?",
            "payload": {"facts": [{"text": "héllo \"✓\"", "score": 1.5}]}, "token_used": 12}  # fmt: skip
    return {**base, **kw}


def every_type() -> list[dict[str, Any]]:
    return [packet(type=t.value, src="network" if t is PacketType.DOC_INIT else "2") for t in PacketType]


def test_frames_are_the_tools_call_requests_an_mcp_client_sends() -> None:
    a = get_adapter("mcp")
    for p in every_type():
        blob = a.encode(p)
        message = sdk.jsonrpc_message_adapter.validate_json(blob)  # the SDK's own reading of a wire message
        assert isinstance(message, sdk.JSONRPCRequest) and message.method == "tools/call"
        assert isinstance(message.id, str) and len(message.id) == 36  # a UUID: every frame the same size
        request = sdk.CallToolRequest.model_validate({"method": message.method, "params": message.params})
        assert request.params.name == p["type"] and request.params.arguments == {"packet": p}
        assert request.params.meta is None and request.params.task is None
        # the packet rides as a JSON object: its bytes in the frame are its canonical JSON
        assert canonical_json(p) in blob
        assert a.decode(blob) == p
        assert a.header_size(p) == len(blob) - len(canonical_json(p))


def test_reads_a_request_the_sdk_made() -> None:
    p = packet()
    params = sdk.CallToolRequest(
        params=sdk.CallToolRequestParams(name="events", arguments={"packet": p})
    ).params
    sdk_made = sdk.JSONRPCRequest(
        jsonrpc="2.0",
        id=7,
        method="tools/call",
        params=params.model_dump(by_alias=True, mode="json", exclude_none=True),
    ).model_dump_json(exclude_none=True)
    assert (
        '"id":7' in sdk_made and '"arguments":{"packet":{"type":"events"' in sdk_made
    )  # not canonical order
    assert get_adapter("mcp").decode(sdk_made.encode()) == p


def test_rejects_invalid_requests() -> None:
    a = get_adapter("mcp")
    good = json.loads(a.encode(packet()))

    def params(**kw: Any) -> dict[str, Any]:
        bad = copy.deepcopy(good)
        bad["params"].update(kw)
        return bad

    cases = [
        (
            {**good, "bogus": 1},
            r"not a JSON-RPC 2.0 request \(request.bogus: Extra inputs are not permitted\)",
        ),
        ({**good, "jsonrpc": "1.0"}, r"request.jsonrpc: Input should be '2.0'"),
        ({**good, "id": True}, r"request.id"),
        ({k: v for k, v in good.items() if k != "id"}, r"request.id: Field required"),
        ({**good, "method": "tools/list"}, "unsupported method 'tools/list'"),
        ({k: v for k, v in good.items() if k != "params"}, "tools/call without params"),
        (params(bogus=1), r"params has unknown members \['bogus'\]"),
        (params(_meta={"progressToken": 1}), r"params members \['_meta'\] are not used by a mesh frame"),
        (params(task={"ttl": 1000}), r"params members \['task'\] are not used"),
        (params(name=7), r"params.name: Input should be a valid string"),
        (
            params(arguments=[good["params"]["arguments"]["packet"]]),
            r"params.arguments: Input should be a valid dictionary",
        ),
        (params(arguments=None), r"arguments must be exactly \{'packet': <packet>\}, got members \[\]"),
        (params(arguments={**good["params"]["arguments"], "more": 1}), r"got members \['more', 'packet'\]"),
        (params(arguments={"packet": "{}"}), "arguments.packet must be a JSON object, got str"),
        (params(name="triples"), "tool name 'triples' is not the packet's topic"),
    ]
    for request, message in cases:
        with pytest.raises(ProtocolError, match=message):
            a.decode(json.dumps(request).encode())
    for blob, message in [
        (b"[1]", "expected a JSON object"),
        (b"{", "malformed JSON"),
        (b"\xff", "not UTF-8"),
    ]:
        with pytest.raises(ProtocolError, match=f"mcp: {message}"):
            a.decode(blob)


def test_header_bytes_are_the_frame_minus_the_packet() -> None:
    a = get_adapter("mcp", "2")
    for p in every_type():
        if p["src"] != "2":
            continue
        typed = parse_packet({**p, "payload": _payload(p["type"])})
        blob = a.encode(typed.to_dict())
        assert a.header_bytes(blob, typed) == len(blob) - len(canonical_json(typed.to_dict())) > 100
        assert a.header_bytes(blob, typed) == a.header_size(typed.to_dict())


def _payload(ptype: str) -> dict[str, Any]:
    return {
        "search_docs": {"passages": [{"chunk": 0, "score": 1.0, "text": "t"}], "n_chunks": 1},
        "events": {"facts": [{"text": "héllo", "score": 1.5}]},
        "triples": {"triples": [], "facts": []},
        "data_event": {"answer": "a", "method": "m", "question": "q", "reading": "r", "candidates": [],
                       "facts_used": 0, "triples_seen": 0},
        "error": {"tool": "t", "error": "e", "on": "o"},
        "subtask": {"sub_task_id": "s", "parent_task_id": "p", "assigned_agent_role": "r", "tool_name": "t",
                    "sub_task_input": {}},
        "result": {"sub_task_id": "s", "parent_task_id": "p", "worker_agent_role": "r", "status": "COMPLETED"},
    }[ptype]  # fmt: skip
