"""The benchmarks: the protocol and strategy comparison (``compare``), the single-call baseline,
what the harness itself costs (``overhead``), agents killed and restarted (``failstorm``, and
``compose_storm`` on a compose stack), a frame flood (``flood``) and runs at once on the
service (``concurrency``). Each writes a results file; none asserts a speed."""
