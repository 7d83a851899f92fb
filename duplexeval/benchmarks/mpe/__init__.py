"""Duplex-MPE (docs/mpe.md): scene files -> adaptive conversations -> Start/Presence/Answer/Shush/Stop.

    scenes/            scene files, rendering (TTS), the adaptive scheduler, scene generation
    plan.py            a job's work units: one conversation per unit (MpePlan)
    results.py         records -> results.json, every metric on its own denominator
    text_reference.py  the text-only reference row (§4.2), per benchmark, not per model
    commands.py        `duplexeval scenes validate|render|generate`
    plugin.py          the family's Benchmark (entry point `duplex-mpe`)

Per-item scoring (duplexeval.benchmarks.mpe.score, .mpe, .mpe_timeline) still sits in
duplexeval/scoring/ until it moves here.
"""
