"""Protocol v1 shim for Freeze-Omni. NOT BUILT OR RUN HERE (no GPU, no weights).

Builds the three objects Freeze-Omni's own server builds (github:VITA-MLLM/Freeze-Omni at
commit 3e17af43b4fe64ba9609b4e1ba94c443c45101c0: `bin/server.py`, `web/pool.py`,
`scripts/run_demo_server.sh`): `models.pipeline.inferencePipeline(configs)` with
`configs.model_path` (the checkpoints folder), `configs.llm_path` (Qwen2-7B-Instruct) and
the demo script's sampling (top_k 20, top_p 0.8, temperature 0.8);
`models.decoder.llm2tts.llm2TTS(model_path)`; `web.vad.VAD()`; and the decoder settings
of `<model_path>/server.json`. Everything else (the state machine, synchronous
generation, the reply queue, fork) is `duplexeval.shims.freeze_omni.FreezeOmniServer`,
tested there on stand-ins with these call signatures.

Weights (`--weights DIR`, else $DUPLEXEVAL_WEIGHTS, else /weights): `checkpoints/` (the
hub repo VITA-MLLM/Freeze-Omni's `checkpoints` folder: server.json, audiollm/, decoder/,
codec/) and `Qwen2-7B-Instruct/` beside it; `--checkpoints` / `--llm-path` name other
places. Upstream's `.cuda()` calls need a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from duplexeval.protocol.server import run_server  # noqa: E402
from duplexeval.shims.freeze_omni import DEFAULT_ROLE, FreezeOmniServer  # noqa: E402


def build(args: argparse.Namespace) -> FreezeOmniServer:
    root = Path(args.weights or os.environ.get("DUPLEXEVAL_WEIGHTS") or "/weights")
    ckpt = Path(args.checkpoints) if args.checkpoints else root / "checkpoints"
    llm = Path(args.llm_path) if args.llm_path else root / "Qwen2-7B-Instruct"
    for what, path in (("Freeze-Omni checkpoints (server.json)", ckpt / "server.json"),
                       ("Qwen2-7B-Instruct (config.json)", llm / "config.json")):
        if not path.is_file():
            sys.exit(f"freeze-omni: {what} not found at {path} (images/freeze-omni/README.md says how to lay out the weights)")
    from models.decoder.llm2tts import llm2TTS
    from models.pipeline import inferencePipeline
    from web.vad import VAD

    configs = argparse.Namespace(model_path=str(ckpt), llm_path=str(llm), top_k=args.top_k, top_p=args.top_p,
                                 temperature=args.temperature)
    server_configs = json.loads((ckpt / "server.json").read_text())
    return FreezeOmniServer(inferencePipeline(configs), llm2TTS(str(ckpt)), VAD(), server_configs, device="cuda",
                            role=args.role)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="folder holding checkpoints/ and Qwen2-7B-Instruct/ (default $DUPLEXEVAL_WEIGHTS, else /weights)")
    parser.add_argument("--checkpoints", help="the Freeze-Omni checkpoints folder")
    parser.add_argument("--llm-path", help="the Qwen2-7B-Instruct folder")
    parser.add_argument("--top-k", type=int, default=20)      # scripts/run_demo_server.sh
    parser.add_argument("--top-p", type=float, default=0.8)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--role", default=DEFAULT_ROLE, help="system role when hello has no prompt")


if __name__ == "__main__":
    run_server(build, description=__doc__, add_arguments=add_arguments)
