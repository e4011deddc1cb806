"""BadgePipe's whole-pipeline benchmark: `scripts/bench` runs `python3 -m benchkit`.

Modules by weight: `figures` (pure arithmetic: percentiles, rates, CPU per event, windows), `cpu` (reading /proc),
`services` (the broker, the database, the build), `pipeline` (the sink and the workers as processes), `runs` (the
modes), `cli` (arguments and the report). Figures are printed, never asserted; the unit tests in `tests/` check the
arithmetic and the parsing.
"""
