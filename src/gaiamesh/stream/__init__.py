"""A stream of work: a coordinator hands items (questions) to the next free worker agent of a
long-lived team, as ProtocolBench's Streaming Queue does (issue 48). Pure cores here, each
tested by plain calls: the items read from a JSONL file (``items``), the dispatcher's decisions
and each item's fate (``dispatch``), the figures of a stream (``summary``)."""
