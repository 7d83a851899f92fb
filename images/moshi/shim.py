"""Protocol v1 shim for Moshi (Kyutai), on moshi 0.2.13 from PyPI.

Run from the repository root (locally) or from /opt/duplexeval (in the image), with that
folder on PYTHONPATH, so the same relative command works in both places:

    python images/moshi/shim.py --socket PATH                 # the real checkpoint
    python images/moshi/shim.py --tiny --socket PATH          # random tiny weights (CPU, CI)
    python images/moshi/shim.py --max-sessions 8 --socket PATH  # 8 sessions in one LMGen batch

`--max-sessions N` (the flag every Python server takes, duplexeval.protocol.server):
N concurrent sessions, one batch row each (moshi_family, "Batched sessions"); default 1.

Everything protocol-related is in `duplexeval.protocol.server`, everything shared by the
Moshi family (frame loop, first-frame delay, teacher forcing with a second Mimi, fork,
text events, seeding) in `duplexeval.shims.moshi_family`; this file only loads models.

Followed: moshi 0.2.13, `moshi/server.py` (`main`: `CheckpointInfo.from_hf_repo(repo,
moshi_weight, mimi_weight, tokenizer, config_path=...)`, `get_mimi`, `get_moshi`,
`get_text_tokenizer`, `LMGen(lm, **lm_gen_config)`) and `moshi/models/loaders.py`
(`get_mimi(None, cfg)` / `get_moshi_lm(None, lm_kwargs)` build randomly initialised
models, `_mimi_config` / `_lm_kwargs` are the Moshi 7B configs the tiny one shrinks).

Real checkpoint: the files of `kyutai/moshiko-pytorch-bf16` (names as moshi's loaders
call them; a `config.json` beside them is used when present) are read from the weights
folder: `--weights DIR`, else `$DUPLEXEVAL_WEIGHTS`, else `/weights` (where the docker
backend mounts the verified folder read-only). HF_HUB_OFFLINE=1 is forced: the shim never
reaches a hub at run time; a missing file is an error naming the folder and the file.

Tiny mode: Moshi's real code path with randomly initialised weights and a tiny config
(Mimi: SEANet dimension 64 / 8 filters, a 1-layer transformer of width 64, quantizer
dimension 32; LM: width 64, 2 layers; depformer: width 32, 1 layer; the real n_q 16 /
dep_q 8 / card 2048 / text card 32000 / delays). torch is seeded with `TINY_WEIGHTS_SEED`
before building, so every process (local or in the image) builds identical weights (Mimi's
codebooks, which an untrained Mimi leaves at zero, are sampled from its own latents: see
`calibrate_codebooks`), and it runs on one CPU thread (deterministic; about 30-45 ms per
80 ms frame here, faster than real time: docs/models.md). It says nothing meaningful: no
text tokenizer (no `text_events`), and its voice is noise; the spec `moshi-tiny` labels
every result with that caveat.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

from duplexeval.protocol.server import run_server
from duplexeval.shims.moshi_family import FamilyModels, MoshiFamilyServer, disable_torch_compile_on_cpu

HF_REPO = "kyutai/moshiko-pytorch-bf16"
TINY_WEIGHTS_SEED = 20240917  # any fixed value: what matters is that every process uses it


def tiny_configs() -> tuple[dict, dict]:
    """(mimi_config, lm_kwargs): moshi 0.2.13's Moshi 7B configs, shrunk; streams and delays kept."""
    from moshi.models import loaders

    seanet = dict(loaders._seanet_kwargs, dimension=64, n_filters=8)
    mimi = dict(loaders._mimi_config)
    mimi["seanet"] = seanet
    mimi["quantizer"] = dict(loaders._quantizer_kwargs, dimension=32, input_dimension=64, output_dimension=64)
    mimi["transformer"] = dict(loaders._transformer_kwargs, d_model=64, num_heads=8, num_layers=1,
                               dim_feedforward=256, input_dimension=64, output_dimensions=[64])
    lm = dict(loaders._lm_kwargs, dim=64, num_heads=4, num_layers=2, depformer_dim=32, depformer_num_heads=4,
              depformer_num_layers=1, depformer_dim_feedforward=int(4.125 * 32))
    return mimi, lm


def calibration_audio(seconds: float = 8.0) -> torch.Tensor:
    """Seeded tones, chirps, noise bursts and silence: varied enough to spread Mimi's latents."""
    g = torch.Generator().manual_seed(TINY_WEIGHTS_SEED)
    n = int(seconds * 24000)
    t = torch.arange(n, dtype=torch.float32) / 24000
    seg = 24000 // 2
    parts = []
    for i in range(0, n, seg):
        tt = t[i:i + seg]
        kind = i // seg % 4
        f0 = float(torch.empty(1).uniform_(80.0, 3000.0, generator=g))
        if kind == 0:
            parts.append(0.5 * torch.sin(2 * torch.pi * f0 * tt))
        elif kind == 1:
            parts.append(0.5 * torch.sin(2 * torch.pi * f0 * tt * (1 + 2 * (tt - tt[0]))))
        elif kind == 2:
            parts.append(float(torch.rand(1, generator=g)) * torch.randn(len(tt), generator=g))
        else:
            parts.append(torch.zeros(len(tt)))
    return torch.cat(parts)[:n].clamp(-1, 1)[None, None]


def calibrate_codebooks(mimi: torch.nn.Module) -> None:
    """Codebooks for an untrained Mimi, drawn from its own latents.

    Mimi's codebooks are buffers, not parameters: untrained, `embedding_sum` is all zeros
    (moshi/quantization/core_vq.py, waiting for a k-means initialisation in training), so
    every frame would encode to the same codes and every code decode to the same sound:
    the model would hear nothing and forcing would be vacuous. As that k-means starts,
    each level's centroids are sampled from the residuals it quantises (here: the latents
    of `calibration_audio`, jittered), level after level; seeded, like the parameters.
    """
    g = torch.Generator().manual_seed(TINY_WEIGHTS_SEED + 1)
    with torch.no_grad():
        dev = next(mimi.parameters()).device
        emb = mimi.encode_to_latent(calibration_audio().to(dev), quantize=False)   # [1, D, T], not streaming
        for rvq in (mimi.quantizer.rvq_first, mimi.quantizer.rvq_rest):
            residual = rvq.input_proj(emb)
            for layer in rvq.vq.layers:
                z = layer.project_in(layer._rearrange_input(residual))
                z = z.reshape(-1, z.shape[-1])                              # [T, codebook dim]
                cb = layer._codebook
                pick = torch.randint(0, z.shape[0], (cb.codebook_size,), generator=g).to(dev)
                jitter = torch.randn(cb.codebook_size, z.shape[1], generator=g).to(dev) * 0.5 * z.std(dim=0, keepdim=True)
                cb.embedding_sum.copy_(z[pick] + jitter)
                cb.cluster_usage.fill_(1.0)
                cb._initialized.fill_(1.0)
                cb._embedding = None  # the cached centroids are recomputed from embedding_sum
                residual = residual - layer.decode(layer.encode(residual))


def find_weight_file(folder: Path, name: str) -> Path:
    """`folder/name`, or the one file of that name below it (a hub cache's snapshots/<rev>/)."""
    direct = folder / name
    if direct.is_file():
        return direct
    found = sorted(p for p in folder.rglob(name) if p.is_file())
    if len(found) == 1:
        return found[0]
    what = "no file" if not found else f"{len(found)} files"
    raise FileNotFoundError(f"weights folder {folder}: {what} named {name!r} (moshi needs it; "
                            f"`duplexeval weights fetch moshi` places the files of {HF_REPO} there)")


def weights_folder(arg: str | None) -> Path:
    """`--weights`, else $DUPLEXEVAL_WEIGHTS, else /weights; a folder named but absent is an error."""
    named = arg or os.environ.get("DUPLEXEVAL_WEIGHTS")
    if named:
        if not Path(named).is_dir():
            raise FileNotFoundError(f"weights folder {named} does not exist (the files of {HF_REPO})")
        return Path(named)
    if Path("/weights").is_dir():
        return Path("/weights")
    raise FileNotFoundError(f"no weights folder: pass --weights DIR or set DUPLEXEVAL_WEIGHTS "
                            f"(the files of {HF_REPO}; `duplexeval weights fetch moshi`)")


class MoshiShim(MoshiFamilyServer):
    model_name = "moshi"
    # `--max-sessions N`: N sessions in one LMGen batch (moshi_family, "Batched sessions");
    # each row of the real model holds its own KV caches (about 1.5 GB in bf16 at Moshi's
    # 3000-step context), so 64 rows fill most of an 80-140 GB GPU.
    max_sessions_supported = 64

    def __init__(self, *, tiny: bool, weights: str | None = None, device: str | None = None,
                 warmup_frames: int = 4) -> None:
        self.tiny = tiny
        self.weights_arg = weights
        self.device_name = device or ("cpu" if tiny or not torch.cuda.is_available() else "cuda")
        if tiny:
            self.model_name = "moshi-tiny"
        super().__init__(warmup_frames=warmup_frames)

    def load_models(self) -> FamilyModels:
        disable_torch_compile_on_cpu(self.device_name)
        return self._load_tiny() if self.tiny else self._load_checkpoint()

    def _load_tiny(self) -> FamilyModels:
        from moshi.models import LMGen, loaders

        mimi_cfg, lm_kwargs = tiny_configs()
        torch.manual_seed(TINY_WEIGHTS_SEED)
        mimi = loaders.get_mimi(None, mimi_cfg, device=self.device_name, num_codebooks=8)
        lm = loaders.get_moshi_lm(None, lm_kwargs=lm_kwargs, device=self.device_name, dtype=torch.float32)
        calibrate_codebooks(mimi)
        forced = loaders.get_mimi(None, mimi_cfg, device=self.device_name, num_codebooks=8)
        forced.load_state_dict(mimi.state_dict())  # the same codec, its own streaming state
        return FamilyModels(mimi=mimi, lm_gen=LMGen(lm), forced_mimi=forced, device=self.device_name)

    def _load_checkpoint(self) -> FamilyModels:
        os.environ["HF_HUB_OFFLINE"] = "1"  # also set by main(), before anything imports huggingface_hub
        from moshi.models import LMGen, loaders

        folder = weights_folder(self.weights_arg)
        config = folder / "config.json"
        names = {"moshi_name": loaders.MOSHI_NAME, "mimi_name": loaders.MIMI_NAME,
                 "tokenizer_name": loaders.TEXT_TOKENIZER_NAME}
        extra: dict = {}
        if config.is_file():
            raw = json.loads(config.read_text(encoding="utf-8"))
            names.update({k: raw[k] for k in names if k in raw})
            if raw.get("mimi_config_name"):
                extra["mimi_config_path"] = find_weight_file(folder, raw["mimi_config_name"])
            if raw.get("lora_name"):
                extra["lora_weights"] = find_weight_file(folder, raw["lora_name"])
            extra["config_path"] = config
        # Local Paths make every hf_get a no-op; without config.json, from_hf_repo asks the
        # (offline) hub for one, gets LocalEntryNotFoundError and takes the Moshi 7B defaults.
        info = loaders.CheckpointInfo.from_hf_repo(
            HF_REPO, moshi_weights=find_weight_file(folder, names["moshi_name"]),
            mimi_weights=find_weight_file(folder, names["mimi_name"]),
            tokenizer=find_weight_file(folder, names["tokenizer_name"]), **extra)
        dev = self.device_name
        dtype = torch.bfloat16 if dev.startswith("cuda") else torch.float32
        mimi = info.get_mimi(device=dev)
        forced = info.get_mimi(device=dev)
        lm = info.get_moshi(device=dev, dtype=dtype)
        if lm.condition_provider is not None and lm.condition_provider.conditioners:
            raise RuntimeError(f"{folder}: this checkpoint needs condition tensors (model_type {info.model_type}); "
                               "the Moshi shim drives unconditioned Moshi only")
        return FamilyModels(mimi=mimi, lm_gen=LMGen(lm, **info.lm_gen_config), forced_mimi=forced,
                            text_tokenizer=info.get_text_tokenizer(), device=dev)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tiny", action="store_true", help="random tiny weights on CPU (the real code path; CI)")
    parser.add_argument("--weights", help="folder with the checkpoint files (default $DUPLEXEVAL_WEIGHTS, /weights)")
    parser.add_argument("--device", help="torch device (default: cuda when available; cpu with --tiny)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default 1 with --tiny: deterministic and faster than real time)")


def make_server(args: argparse.Namespace) -> MoshiShim:
    threads = args.threads if args.threads is not None else (1 if args.tiny else None)
    if threads:
        torch.set_num_threads(threads)
    server = MoshiShim(tiny=args.tiny, weights=args.weights, device=args.device)
    print(f"{server.model_name}: loaded on {server.device} ({torch.get_num_threads()} CPU threads), "
          f"capabilities {list(server.capabilities)}", file=sys.stderr, flush=True)
    return server


def main() -> None:
    # Before moshi / huggingface_hub are imported (they read it at import time): the shim
    # never reaches a hub at run time, whatever the environment says.
    os.environ["HF_HUB_OFFLINE"] = "1"
    run_server(make_server, description=__doc__.splitlines()[0], add_arguments=add_arguments)


if __name__ == "__main__":
    main()
