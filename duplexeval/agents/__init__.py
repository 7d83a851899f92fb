"""Reference agents: real protocol v1 servers that make the metrics testable (docs/agents.md).

Each runs as its own process: `python -m duplexeval.agents.<name> --socket PATH`.
`silent` never speaks, `babbler` always speaks, `oracle` reads the scene's labels and
behaves perfectly, `cascade` is a real VAD -> ASR -> responder -> TTS system, and
`faulty` misbehaves on purpose for the fault tests.
"""
