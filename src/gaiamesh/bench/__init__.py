"""The benchmarks, in rooms by what they measure: the protocol and strategy comparison
(``compare``), the attacks each protocol stops (``attacks``), agents and links under stress
(``storms``), a stream of items (``stream``), a deployed swarm (``swarm``), what ``WIRE_TLS``
costs (``tls``), each protocol SDK's own floor beside our native wire (``wire``), what the
harness itself costs (``overhead``) and what the model writes held to a shape (``model``); the
statistics, plots and machine load they share live here. Each writes a results file; none
asserts a speed."""
