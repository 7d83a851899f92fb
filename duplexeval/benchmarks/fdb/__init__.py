"""Full-Duplex-Bench v1.0 (Lin et al., arXiv 2503.04721) as a benchmark plug-in (family `full-duplex-bench`).

    plugin.py     FullDuplexBench: plan, re-score, report, the `fdb` commands
    plan.py       FdbPlan: one sample per unit, input.wav as a file stimulus
    samples.py    which samples a task plays; samples.json, what scoring keeps of each
    stimulus.py   input.wav as heard, with the reference agents' cues
    metrics.py    the v1.0 rules (TOR, latency, backchannel frequency and JSD), pure functions
    score.py      recording -> records -> the task's means (results.json)
    embedded.py   the embedded mini set rendered into the published layout
    published.py, report.py   the published v1.0 table and our rows beside it

Registered by entry point like the built-in families; nothing outside this package names it
(besides its specs, data, docs, tests and golden file). docs/fdb.md. The entry point names
`duplexeval.benchmarks.fdb.plugin:FullDuplexBench`; this file imports nothing, so a module
of the package importing a sibling (`from duplexeval.benchmarks.fdb import layout`) never
runs the plug-in module first (no circle through this `__init__`).
"""
