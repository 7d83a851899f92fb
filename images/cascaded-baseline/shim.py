"""Protocol v1 server of the cascaded baseline, as the image runs it.

The cascade itself is `duplexeval.agents.cascaded_baseline` (VAD endpointing -> Whisper ASR
-> an OpenAI-compatible LLM -> flite, with barge-in; its docstring has the settings); this
file only runs it, so the image folder has a shim like every model's. Locally the spec
runs the module directly (`python -m duplexeval.agents.cascaded_baseline`).
"""

from duplexeval.agents.cascaded_baseline import main

if __name__ == "__main__":
    main()
