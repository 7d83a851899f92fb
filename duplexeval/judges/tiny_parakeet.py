"""A randomly initialised tiny Parakeet-TDT model (.nemo), built from a config with no download, for tests.

The published model (nvidia/parakeet-tdt-0.6b-v2) is a FastConformer encoder, an LSTM
prediction network and a joint network that predicts a token and a duration (TDT) over
a SentencePiece vocabulary. This builds the same classes at toy size (one conformer
layer of width 16, a 32-piece BPE vocabulary trained here on one sentence) so the real
NeMo code path (restore_from, transcribe with word timestamps) runs on CPU in seconds.
Random weights mostly emit blank; `bias_tokens` raises the token logits so that words
come out and their timing code runs. Runs in .venv-parakeet only (NeMo).
"""

from __future__ import annotations

from pathlib import Path

DURATIONS = [0, 1, 2, 3, 4]


def _tokenizer(folder: Path) -> Path:
    import sentencepiece as spm

    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "text.txt"
    text.write_text("the cat sat on a mat and said hello to the dog today okay yes no maybe\n" * 50, "utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(folder / "tokenizer"), vocab_size=32,
                                   model_type="bpe", character_coverage=1.0, bos_id=-1, eos_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    (folder / "vocab.txt").write_text("".join(sp.id_to_piece(i) + "\n" for i in range(sp.get_piece_size())), "utf-8")
    return folder


def _config(tokenizer_dir: Path, width: int = 16, layers: int = 1, heads: int = 2, features: int = 80,
            pred_width: int | None = None, conv_channels: int | None = None, ff_expansion: int = 2) -> dict:
    pred = pred_width or width
    return {
        "sample_rate": 16000,
        "model_defaults": {"enc_hidden": width, "pred_hidden": pred, "joint_hidden": pred,
                           "tdt_durations": DURATIONS, "num_tdt_durations": len(DURATIONS)},
        "tokenizer": {"dir": str(tokenizer_dir), "type": "bpe"},
        "preprocessor": {"_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
                         "sample_rate": 16000, "normalize": "per_feature", "window_size": 0.025,
                         "window_stride": 0.01, "window": "hann", "features": features, "n_fft": 512, "log": True,
                         "frame_splicing": 1, "dither": 0.0, "pad_to": 0, "pad_value": 0.0},
        "encoder": {"_target_": "nemo.collections.asr.modules.ConformerEncoder", "feat_in": features, "feat_out": -1,
                    "n_layers": layers, "d_model": width, "subsampling": "dw_striding", "subsampling_factor": 8,
                    "subsampling_conv_channels": conv_channels or width, "ff_expansion_factor": ff_expansion, "self_attention_model": "rel_pos",
                    "n_heads": heads, "att_context_size": [-1, -1], "xscaling": True, "untie_biases": True,
                    "pos_emb_max_len": 5000, "conv_kernel_size": 9, "conv_norm_type": "batch_norm",
                    "dropout": 0.0, "dropout_pre_encoder": 0.0, "dropout_emb": 0.0, "dropout_att": 0.0},
        "decoder": {"_target_": "nemo.collections.asr.modules.RNNTDecoder", "normalization_mode": None,
                    "random_state_sampling": False, "blank_as_pad": True,
                    "prednet": {"pred_hidden": pred, "pred_rnn_layers": 1, "t_max": None, "dropout": 0.0}},
        "joint": {"_target_": "nemo.collections.asr.modules.RNNTJoint", "log_softmax": None,
                  "preserve_memory": False, "fuse_loss_wer": False, "fused_batch_size": 4,
                  "jointnet": {"joint_hidden": pred, "activation": "relu", "dropout": 0.0},
                  "num_extra_outputs": len(DURATIONS)},
        "decoding": {"strategy": "greedy_batch", "model_type": "tdt", "durations": DURATIONS,
                     "greedy": {"max_symbols": 10}},
        "loss": {"loss_name": "tdt", "tdt_kwargs": {"fastemit_lambda": 0.0, "clamp": -1.0, "durations": DURATIONS,
                                                    "sigma": 0.02, "omega": 0.1}},
    }


# The published model's encoder and decoder sizes (FastConformer 24 x 1024, 8 heads, feed-forward
# x4, 256 subsampling channels, 128 mel features, a 640-wide prediction and joint network), for
# timing the architecture with random weights (bench/bench_parakeet_cpu.py); its 1,024-piece
# vocabulary is not rebuilt.
PUBLISHED_SIZE = {"width": 1024, "layers": 24, "heads": 8, "features": 128, "pred_width": 640, "conv_channels": 256,
                  "ff_expansion": 4}


def write_tiny_parakeet(path: Path, *, seed: int = 0, bias_tokens: float = 3.0, **size: int) -> Path:
    """Writes `path` (a .nemo file) and returns it; the same seed gives the same weights.

    `size` (width, layers, heads, features, pred_width, conv_channels, ff_expansion) scales the model: PUBLISHED_SIZE for
    the published architecture; the default is the toy."""
    import tempfile

    import torch
    from nemo.collections.asr.models import EncDecRNNTBPEModel
    from omegaconf import OmegaConf, open_dict

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(seed)
        model = EncDecRNNTBPEModel(cfg=OmegaConf.create(_config(_tokenizer(Path(tmp) / "tokenizer"), **size)))
        with open_dict(model.cfg):
            model.cfg.validation_ds = {"use_start_end_token": False}   # read by transcribe's data loader
        with torch.no_grad():
            model.joint.joint_net[-1].bias[: model.tokenizer.vocab_size] += bias_tokens
        model.save_to(str(path))
    return path
