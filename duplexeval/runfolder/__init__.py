"""A run folder's own files, below the benchmark families that write them: the planned job
(`plan.Job`), a job folder's `benchmark.json`/`model.json`, the <model>/<benchmark> folders
and their specs, the manifest's provenance, and sealing and verifying the folder's hashes.

It sits under `benchmarks/` and `recordings/` in the import layers (docs/architecture.md,
"Layers"), so a family writes and seals its folders without reaching up into `runs/`,
which orchestrates a whole run (execute, cost estimates, sensitivity, statistics).
"""
