"""``gaiamesh bench-attacks``: the attacks, the attackers on the wire (the relay's WebSocket, a protocol's own), the
runs per column and attack, their judge and the files."""
