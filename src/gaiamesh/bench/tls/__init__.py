"""``gaiamesh bench-tls``: what ``WIRE_TLS`` costs on the relay's wire, ``off``, ``tls`` and ``mtls`` side by side."""
