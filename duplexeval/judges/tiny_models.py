"""Randomly initialised tiny models of the papers' ASR, built from the packages' own code.

RANDOM WEIGHTS: these models exercise the real loading and inference code of
`qwen-asr` (Qwen3-ASR and its forced aligner) and `openai-whisper` /
`whisper-timestamped` on CPU in seconds, with no download. What they "hear" is
meaningless; tests assert the adapters' contract (word order, times inside the clip,
monotonic, empty audio -> empty transcript, cache keys), never the text.
`images/harness/check.py` uses them too, so an image can be checked without weights.

Each builder writes a model folder / checkpoint the backends load through the same
`from_pretrained` / `load_model` calls the real weights go through.
"""

from __future__ import annotations

import json
from pathlib import Path

RANDOM_WEIGHTS_LABEL = "random tiny weights (real code path, meaningless text)"

# --- Whisper (openai-whisper checkpoint format) ------------------------------------------

TINY_WHISPER_DIMS = dict(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=2,
                         n_vocab=51864, n_text_ctx=448, n_text_state=64, n_text_head=2, n_text_layer=2)


def write_tiny_whisper(path: Path, seed: int = 0) -> Path:
    """An English-only Whisper checkpoint (`{"dims", "model_state_dict"}`, as openai-whisper saves them)."""
    import torch
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(seed)
    model = Whisper(ModelDimensions(**TINY_WHISPER_DIMS))
    with torch.no_grad():
        # openai-whisper leaves the decoder's positional embedding as torch.empty (a checkpoint
        # fills it): random tiny weights must set it, or every run decodes other garbage.
        model.decoder.positional_embedding.normal_(0.0, 0.02)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"dims": TINY_WHISPER_DIMS, "model_state_dict": model.state_dict()}, path)
    return path


# --- Qwen3-ASR (transformers folder) ---------------------------------------------------

# Qwen's layout of special tokens: the byte-level vocabulary fills ids below 151643, then
# <|endoftext|> 151643, <|im_start|> 151644, <|im_end|> 151645 (the ids Qwen3-ASR's
# generate() stops on), then the audio and ASR markers.
_QWEN_BASE_VOCAB = 151643
_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|audio_start|>", "<|audio_end|>",
             "<|audio_pad|>", "<asr_text>", "<timestamp>"]
# Renders what qwen-asr builds (system context, one audio, generation prompt); the real
# template ships with the weights (chat_template.json).
_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'audio' %}<|audio_start|><|audio_pad|><|audio_end|>{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _bytes_to_unicode() -> list[str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def _write_tokenizer_files(folder: Path) -> None:
    """vocab.json / merges.txt of a byte-level BPE with no merges, padded to Qwen's size, specials last."""
    vocab = {ch: i for i, ch in enumerate(_bytes_to_unicode())}
    for i in range(len(vocab), _QWEN_BASE_VOCAB):
        vocab[f"\u0120w{i}"] = i  # " w123": random output decodes to space-separated "words"
    for token in _SPECIALS:  # in the vocabulary, so their ids are fixed: 151643, 151644, ...
        vocab[token] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")


def write_tiny_qwen3_asr(folder: Path, *, aligner: bool = False, seed: int = 0) -> Path:
    """A Qwen3-ASR (or, with aligner=True, a Qwen3-ForcedAligner) model folder with random weights."""
    import torch
    from qwen_asr.core.transformers_backend import Qwen3ASRConfig, Qwen3ASRForConditionalGeneration, Qwen3ASRProcessor
    from transformers import Qwen2TokenizerFast, WhisperFeatureExtractor

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _write_tokenizer_files(folder)
    tokenizer = Qwen2TokenizerFast(
        vocab_file=str(folder / "vocab.json"), merges_file=str(folder / "merges.txt"),
        unk_token=None, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=_SPECIALS,
        extra_special_tokens={"audio_token": "<|audio_pad|>", "audio_bos_token": "<|audio_start|>",
                              "audio_eos_token": "<|audio_end|>"},
    )
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _SPECIALS}
    assert ids["<|endoftext|>"] == 151643 and ids["<|im_end|>"] == 151645, ids
    vocab_size = max(ids.values()) + 1
    feature_extractor = WhisperFeatureExtractor(feature_size=128, sampling_rate=16000, hop_length=160,
                                                chunk_length=30, n_fft=400)
    processor = Qwen3ASRProcessor(feature_extractor=feature_extractor, tokenizer=tokenizer,
                                  chat_template=_CHAT_TEMPLATE)
    head_dim = 16
    thinker = {
        "audio_config": {"num_mel_bins": 128, "encoder_layers": 1, "encoder_attention_heads": 2,
                         "encoder_ffn_dim": 64, "d_model": 32, "output_dim": 32, "downsample_hidden_size": 8,
                         "max_source_positions": 1500, "n_window": 50, "n_window_infer": 400,
                         "conv_chunksize": 500},
        "text_config": {"vocab_size": vocab_size, "hidden_size": 32, "intermediate_size": 64,
                        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                        "head_dim": head_dim, "max_position_embeddings": 4096,
                        "rope_scaling": {"rope_type": "default", "mrope_section": [4, 2, 2],
                                         "interleaved": True}},
        "audio_token_id": ids["<|audio_pad|>"], "audio_start_token_id": ids["<|audio_start|>"],
    }
    extra = {}
    if aligner:
        extra = {"timestamp_token_id": ids["<timestamp>"], "timestamp_segment_time": 80.0}
    config = Qwen3ASRConfig(thinker_config=thinker, support_languages=["English"], **extra)
    torch.manual_seed(seed)
    model = Qwen3ASRForConditionalGeneration(config).eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
