"""``gaiamesh bench-wire``: each native protocol's SDK floor beside our binding (issue 63).

For each protocol, the SDK's own client against the SDK's own minimal echo server (``floor``),
and the same requests through our binding's client and server with an echo agent (``ours``),
at 1 and at many concurrent peers, through the same counting tap (``mesh/native/tap.py``):
time per request, CPU of each side, bytes on the socket, connections opened and reused.
``servers.py`` (both sides' servers, in a process of their own), ``clients.py`` (both sides'
clients), ``run.py`` (rounds), ``report.py`` (summary, CSV, markdown, plot).
"""

# The protocols with an SDK floor (floor.py); here, so that the CLI names them without loading
# an SDK or an HTTP stack (the model server's image imports the CLI and has neither).
FLOOR_PROTOCOLS = ("json", "a2a", "acp", "mcp", "anp", "agora")
# What ``bench-wire`` measures unless told: see cli/wire.py for why anp and agora are not in it.
DEFAULT_PROTOCOLS = ("json", "a2a", "acp", "mcp")
