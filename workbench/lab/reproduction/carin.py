"""CARIn (Panopoulos, Venieris & Venieris, TECS 2024): the ledger items, one per figure and table
in the paper's order (Tables 1-6 setup and models, Figs 3-6 designs against baselines, Tables 7-8
and Figs 7-8 runtime adaptation, Tables 9-10 against OODIn).

What the workbench has for CARIn and how it is used here:

- Tables 2-5 (accuracy per quantisation scheme): the per-scheme accuracy *drop* (scheme minus
  FP32, in points) of the models measured here with LiteRT on 1000 Fashion-MNIST test images
  (``profiles/host-real.json``), against the paper's drop for the same architecture. Absolute
  accuracies are never compared across datasets. Text, audio and face models are not here.
- Figs 3-6 (CARIn's d0 against B-A, B-S, transferred, multi-DNN-unaware and OODIn): the modelled
  phones' per-use-case gains (``reports/carin_designs``) and, for UC1/UC2, the real-scale host's
  measured r1/r2 (``reports/host_real``), against section 7.1's text (the per-use-case bars are
  only in the plots; the text pools UC1-UC2).
- Tables 7-8: RASS's designs and policy on the modelled S20 FE / A71.
- Figs 7-8: the runtime's design sequence on this machine (``reports/runtime``).
- Table 9: OODIn's re-solve on the modelled phones, timed here: only the growth with the
  decision-space size is compared (phone milliseconds are not this machine's).
- Table 10: storage of RASS's designs against every candidate, from the model files here and for
  the modelled phones.

The paper's table numbers are read from the transcription (``workbench/data/papers/carin.json``)
so the rules and the claims cannot drift apart; section 7.1's text numbers are typed as printed.
"""

from __future__ import annotations

from ... import papers
from .evidence import Agg, Diff, Ptr, Ratio
from .rules import Bound, Comparison, Gain, Is, Item, Near, Order, Within

P = "carin"
_PAPER = papers.paper("carin")

HOST_REAL_PROFILE = "profiles/host-real.json"
DESIGNS = "reports/carin_designs/metrics.json"
QUICKSTART = "reports/quickstart/metrics.json"
HOST_REAL = "reports/host_real/metrics.json"
RUNTIME = "reports/runtime/metrics.json"
SOLVE_TIME = "reports/oodin_solve_time/metrics.json"
TEXT_ACC = "reports/bench/text_accuracy.json"
CARIN_RT = "reports/bench/carin_runtime.json"

SCHEMES = ("FP16", "DR8", "FX8", "FFX8")
DEVICES = (("a71", "A71"), ("s20fe", "S20"), ("pixel7", "P7"))

# --- Tables 2-5: accuracy drops per scheme -------------------------------------------------------
#: One point: our FP32 accuracies are 88-90% on n = 1000 test images, so one accuracy has a
#: standard error of sqrt(0.89 * 0.11 / 1000) = 0.99 points; a drop is paired (same images), its
#: standard error sqrt(q / n) for a share q of images whose correctness flips: 0.32 points at
#: q = 1%, 0.50 at 2.5%, so 1 point is about two standard errors of a drop of a few tenths. The
#: paper's drops for these models are -0.82 to +0.97 points.
DROP_TOL = 1.0
DROP_NOTE = (
    "Drops (scheme minus FP32, points) are compared, never absolute accuracies: ours are "
    "Fashion-MNIST top-1 measured with LiteRT on 1000 test images (profiles/host-real.json), "
    "the paper's are its own datasets. Tolerance 1 point: one 1000-image accuracy near 89% has a "
    "standard error of 0.99 points; a paired drop sqrt(q/n), 0.32-0.50 points when 1-2.5% of the "
    "images flip, so 1 point is about two standard errors of a drop of a few tenths (the paper's "
    "drops in Tables 2 and 4 span -0.82 to +0.97 points). FX8 and FFX8 give identical accuracies "
    "for every model here, so their drops are the same number.")


def _table(task: str) -> dict:
    return papers.model_table(task)


def _paper_acc(task: str, model: str) -> dict[str, float]:
    return next(m for m in _table(task)["models"] if m["model"] == model)["accuracy"]


def _acc(model: str, scheme: str) -> Ptr:
    return Ptr(f"{HOST_REAL_PROFILE}#/configs/id=fashion:{model}:{scheme}:CPU[0]:t1:xnn/A")


def _drops(task: str, paper_model: str, ours: str, shown: str) -> tuple[Comparison, ...]:
    """The four schemes' drops of one architecture: ours (Fashion-MNIST) against the paper's."""
    acc = _paper_acc(task, paper_model)
    out = []
    for s in SCHEMES:
        if acc.get(s) is None:
            continue
        out.append(Comparison(
            f"{shown} {s} - FP32 (points)", Diff(_acc(ours, s), _acc(ours, "FP32")),
            Near(round(acc[s] - acc["FP32"], 2), DROP_TOL, " pt"), " pt"))
    return tuple(out)


#: CARIn Table 3, BERT-L2-H128 (the smallest of UC2's models, closest in size to MiniLM-L6).
_T3 = _paper_acc("uc2", "BERT-L2-H128")


def _drop_text(task: str, model: str) -> str:
    acc = _paper_acc(task, model)
    parts = [f"{s} {acc[s] - acc['FP32']:+.2f}" for s in SCHEMES if acc.get(s) is not None]
    return f"{model} (FP32 {acc['FP32']:g}: " + ", ".join(parts) + ")"


# --- Figs 3-6: gains of CARIn's d0 over the baselines ----------------------------------------------
def _gain(uc: str, baseline: str) -> Agg:
    """The modelled phones' mean gain of d0 over one kind of baseline in one use case (over the
    baselines that meet the constraints; none -> no number)."""
    return Agg(Ptr(f"{DESIGNS}#/gains_per_use_case"), "mean", "mean",
               (("use_case", uc), ("baseline", baseline)))


def _host_gain(uc: str, method: str) -> Ptr:
    return Ptr(f"{HOST_REAL}#/figs/use_case={uc},method={method}/gain", source="real_source")


#: Section 7.1.2: averages pooled over UC1 and UC2 (Figs 3-4) and the three phones.
SINGLE = {"B-A": 1.19, "B-S": 1.57, "transferred": 1.17, "OODIn": 1.5}
#: Section 7.1.3: UC3 (Fig. 5), averages over the phones.
UC3 = {"multi-DNN-unaware": 1.47, "transferred": 1.87, "OODIn": 2.83}

SINGLE_CLAIM = ("Section 7.1.2 pools Figs 3-4 (UC1 and UC2, three phones): CARIn's d0 gains on "
                "average 1.19x over B-A (up to 1.46x), 1.57x over B-S (up to 1.92x), 1.17x over "
                "the transferred designs (up to 1.84x) and 1.5x over OODIn (up to 1.99x)")
SINGLE_READING = ("nothing is read off: the per-use-case bars print no values and the text "
                  "gives only averages pooled over UC1 and UC2, so each use case is compared "
                  "with the pooled average (the averages, not the 'up to' maxima)")


def _single(uc: str) -> tuple[Comparison, ...]:
    modelled = tuple(Comparison(f"modelled phones, {uc.upper()}: gain over {b}", _gain(uc, b),
                                Gain(v, "ratio"), "x") for b, v in SINGLE.items())
    host = {"uc1": "r1", "uc2": "r2"}[uc]
    measured = tuple(Comparison(f"this machine, {host}: gain over {b}", _host_gain(host, b),
                                Gain(SINGLE[b], "ratio"), "x") for b in ("B-A", "B-S", "OODIn"))
    return modelled + measured


def _objective(uc: str, objective: str) -> Ptr:
    return Ptr(f"{DESIGNS}#/objective_gains/use_case={uc},objective={objective}/workbench")


# --- Tables 7-8: designs and policy ---------------------------------------------------------------
def _paper_designs(table: str) -> dict[str, str]:
    """Each role's design in the workbench's label form (``Model SCHEME, PROC_{threads,X}``, tasks
    joined with `` + ``), following the paper's ``d_x = d_y`` rows."""
    t = next(d for d in _PAPER["designs"] if d["table"] == table)
    rows = {r["design"]: r for r in t["rows"]}

    def label(c: dict) -> str:
        hw = c["processor"]
        if c.get("threads") is not None:
            hw += "_{" + f"{c['threads']},{'T' if c.get('xnnpack') else 'F'}" + "}"
        return f"{c['model']} {c['precision']}, {hw}"

    out = {}
    for role, r in rows.items():
        while "same_as" in r:
            r = rows[r["same_as"]]
        out[role] = " + ".join(label(c) for c in r["configs"])
    return out


T7 = _paper_designs("Table 7")
T8 = _paper_designs("Table 8")
ROLES = ("d0", "d1", "d2", "dw", "dwm", "dm")

# --- Table 9 --------------------------------------------------------------------------------------
_T9 = {(dev, space): (avg, mx) for space, dev, avg, mx in _PAPER["oodin_solve_time_ms"]["rows"]}
_T9_GROWTH = {dev: _T9[(dev, 10000)][0] / _T9[(dev, 500)][0] for dev, _ in DEVICES}


def _solve_growth(dev: str) -> Ratio:
    return Ratio(Ptr(f"{SOLVE_TIME}#/rows/device={dev},space=10000/oodin_avg_ms"),
                 Ptr(f"{SOLVE_TIME}#/rows/device={dev},space=500/oodin_avg_ms"))


# --- Table 10 -------------------------------------------------------------------------------------
_T10 = {(uc, dev): (carin, oodin, red) for uc, dev, carin, oodin, red in _PAPER["storage_mb"]["rows"]}


def _t10_range(uc: str) -> tuple[float, float]:
    reds = [_T10[(uc, dev)][2] for dev, _ in DEVICES]
    return min(reds), max(reds)


def _t10_text() -> str:
    parts = []
    for uc in ("uc1", "uc2", "uc3", "uc4"):
        reds = "/".join(f"{_T10[(uc, dev)][2]:.2f}" for dev, _ in DEVICES)
        parts.append(f"{uc.upper()} {reds}x")
    return "; ".join(parts) + " (A71/S20/P7)"


ITEMS: tuple[Item, ...] = (
    Item(P, "Table 1", "quantisation schemes", kind="setup",
         claim="Five schemes from the TFLite converter: FP32; FP16 (fp16 weights, fp16/fp32 "
               "activations, 2x smaller); DR8 (int8 weights, fp32 activations); FX8 (int8 "
               "weights, int8/fp32 activations, float I/O); FFX8 (int8 weights, activations and "
               "I/O); DR8, FX8 and FFX8 are 4x smaller than FP32."),
    Item(P, "Table 2", "UC1 models: ImageNet top-1 per quantisation scheme",
         claim="Post-training quantisation costs at most 0.66 points of ImageNet top-1 for UC1's "
               "eight models; for the two architectures measured here (drops vs FP32 in points): "
               + _drop_text("uc1", "MobileNet V2 1.0") + "; "
               + _drop_text("uc1", "EfficientNet Lite0") + ".",
         comparisons=_drops("uc1", "MobileNet V2 1.0", "fashion-mobilenetv2-1.0",
                            "MobileNetV2-1.0")
         + _drops("uc1", "EfficientNet Lite0", "fashion-efficientnet-lite0",
                  "EfficientNet-Lite0"),
         missing="RegNetY 008/016, MobileViT XS/S, MobileNet V2 1.4 and EfficientNet Lite4, six "
                 "of UC1's eight models: not in the measured profile",
         note=DROP_NOTE + " The FP16 and DR8 drops of both models are also OODIn Table II's "
              "evidence, compared there with OODIn's drops. The EfficientNet-Lite0 drops are the same measurement "
              "as in Table 4 (one Fashion-MNIST model stands for the architecture in both)."),
    Item(P, "Table 3", "UC2 models: text classification accuracy per quantisation scheme",
         claim="On Emotions, quantisation moves text-classification accuracy by -0.35 to +0.30 "
               "points: BERT-L2-H128 92.10 (FP16 +0.00, DR8 -0.20, FX8 -0.35, FFX8 -0.35), "
               "XtremeDistil-L6-H256 93.30 (+0.00, -0.10, -0.15, -0.10), MobileBERT-L24-H512 "
               "93.80 (+0.00, +0.00, -0.15, +0.30).",
         comparisons=tuple(
             Comparison(f"MiniLM-L6 + linear head, kaomoji emotions, {s} - FP32 (points)",
                        Ptr(f"{TEXT_ACC}#/drop_pp/{s}"),
                        Near(round(_T3[s] - _T3["FP32"], 2), DROP_TOL, " pt"), " pt")
             for s in SCHEMES),
         missing="the paper's architectures (BERT-L2-H128, XtremeDistil-L6-H256, MobileBERT) "
                 "fine-tuned on Emotions: measured here instead is a frozen MiniLM-L6 sentence "
                 "encoder with a linear head on a 6-class kaomoji task (the only text model and "
                 "labelled text data offline; 3000 test texts, 19% of word pieces [UNK]), so a "
                 "drop that matches is not the paper's model's drop",
         note="Ours: benchmarks/bench_text_accuracy.py, LiteRT, FP32 74.93%; compared with the "
              "paper's BERT-L2-H128 drops. The encoder was not fine-tuned and keeps GELU and "
              "LayerNorm, which CARIn replaced before quantising; FX8/FFX8 lose 31 points here "
              "(paired standard error 1.03 points), the paper's 0.35."),
    Item(P, "Table 4", "UC3 models: scene and audio accuracy per quantisation scheme",
         claim="On MIT Indoor Scenes the int8 schemes cost EfficientNet Lite0 up to 0.82 points "
               "and raise Lite2's accuracy by up to 0.97 points (drops vs FP32 in points): "
               + _drop_text("uc3-vision", "EfficientNet Lite0") + "; "
               + _drop_text("uc3-vision", "EfficientNet Lite2")
               + "; YAMNet mAP 0.3756 FP32, 0.3620 DR8.",
         comparisons=_drops("uc3-vision", "EfficientNet Lite0", "fashion-efficientnet-lite0",
                            "EfficientNet-Lite0")
         + _drops("uc3-vision", "EfficientNet Lite2", "fashion-efficientnet-lite2",
                  "EfficientNet-Lite2"),
         missing="EfficientNet Lite4 and YAMNet (AudioSet mAP): not in the measured profile, "
                 "and no AudioSet or MIT Indoor Scenes data offline",
         note=DROP_NOTE + " The EfficientNet-Lite0 drops are the same measurement as in Table 2 "
              "and, for FP16 and DR8, OODIn Table II, each compared with its own paper's drops."),
    Item(P, "Table 5", "UC4 models: face attribute accuracy per quantisation scheme",
         claim="On UTKFace the quantised MobileNetV2-based heads stay within 0.33 points (gender "
               "95.12 FP32, 94.79-94.95 quantised), 0.053 years MAE (age 5.976 FP32, "
               "5.923-5.974) and -0.13 to +1.13 points (ethnicity 78.17 FP32, 78.04-79.30).",
         missing="GenderNet/AgeNet/EthniNet-MNV2 (62x62, 0.66 M parameters) trained on UTKFace and "
                 "measured per scheme: no UTKFace data or face models here (the toy host's "
                 "digit-attribute heads are a different task)"),
    Item(P, "Table 6", "target devices", kind="setup",
         claim="Google Pixel 7 (Tensor G2, Mali-G710 MP7, TPU, 8 GB), Samsung Galaxy S20 FE "
               "(Exynos 990, Mali-G77 MP11, NPU via EDEN, 6 GB), Samsung Galaxy A71 (Snapdragon "
               "730, Adreno 618, Hexagon HTA and DSP, 6 GB); compute engines CPU/GPU/NPU, plus DSP "
               "on the A71."),
    Item(P, "Fig. 3", "UC1 evaluation: CARIn's d0 against B-A, B-S, transferred and OODIn",
         claim=SINGLE_CLAIM + "; for UC1, against the transferred designs, +0.156 units of "
               "accuracy and +32.7% throughput on average.",
         reading=SINGLE_READING,
         comparisons=_single("uc1") + (
             Comparison("modelled phones, UC1: accuracy increase over the transferred designs "
                        "(points)", _objective("uc1", "A"), Near(0.156, 0.052, " pt"), " pt"),
             Comparison("modelled phones, UC1: throughput increase over the transferred designs",
                        _objective("uc1", "TP"), Gain(32.7, "pct"), "%"),
         ),
         note="Modelled: the phones' profiles are modelled (reports/carin_designs). On them UC1's "
              "B-S design breaks the 41.67 ms bound on all three phones, so there is no B-S gain "
              "for UC1. Measured: r1 on this machine is UC1's SLO (max A, max TP, max L <= 41.67 "
              "ms) over full-size MobileNetV2/EfficientNet-Lite0-2 on Fashion-MNIST (A measured); "
              "one machine, so no transferred designs. The accuracy increase (+0.156 points) is checked "
              "as Gain's one third in its own unit: within 0.052 points (Gain would print %)."),
    Item(P, "Fig. 4", "UC2 evaluation: CARIn's d0 against B-A, B-S, transferred and OODIn",
         claim=SINGLE_CLAIM + "; for UC2, against the transferred designs, 2.8 MB smaller models "
               "and a 19.9% latency speed-up at the same accuracy on average.",
         reading=SINGLE_READING,
         comparisons=_single("uc2") + (
             Comparison("modelled phones, UC2: model size change against the transferred designs "
                        "(MB)", _objective("uc2", "S"), Near(-2.8, 0.93, " MB"), " MB"),
             Comparison("modelled phones, UC2: latency speed-up at the same accuracy over the "
                        "transferred designs", _objective("uc2", "L"), Gain(19.9, "pct"), "%"),
         ),
         note="Modelled phones as in Fig. 3. r2 on this machine is UC2's SLO (min L, min S, max "
              "A, MF <= 90 MB) over image classifiers, not the paper's text models; its A is the "
              "models' CITED ImageNet top-1 (no ImageNet data offline), latency and size are "
              "measured. The size change (-2.8 MB) is checked as Gain's one third in its own unit: "
              "within 0.93 MB, so 0 MB fails (Gain would print %)."),
    Item(P, "Fig. 5", "UC3 evaluation: CARIn's d0 against multi-DNN-unaware, transferred and "
                      "OODIn",
         claim="Section 7.1.3, UC3 (three phones): CARIn's d0 gains on average 1.47x over the "
               "multi-DNN-unaware baseline (up to 3.24x), 1.87x over the transferred designs (up "
               "to 4.06x) and 2.83x over OODIn (up to 10.69x).",
         comparisons=tuple(Comparison(f"modelled phones, UC3: gain over {b}", _gain("uc3", b),
                                      Gain(v, "ratio"), "x") for b, v in UC3.items()),
         note="The averages are compared, not the 'up to' maxima. Figs 5-6 compare against the "
              "multi-DNN-unaware, transferred and OODIn baselines only (no B-A/B-S). No "
              "multi-DNN use case is evaluated against baselines on this machine."),
    Item(P, "Fig. 6", "UC4 evaluation: CARIn's d0 against multi-DNN-unaware, transferred and "
                      "OODIn",
         claim="Section 7.1.3, UC4: the majority of the baselines fail to produce a viable design "
               "(the 10 ms latency bound), and where a baseline does not fail it reaches parity "
               "with CARIn (gain 1.0x), one model per task leaving no other choice.",
         comparisons=tuple(
             Comparison(f"modelled phones, UC4: gain over {b} where it does not fail",
                        _gain("uc4", b), Near(1.0, 0.05, "x"), "x")
             for b in ("multi-DNN-unaware", "transferred", "OODIn")) + tuple(
             Comparison(f"modelled phones, UC4: {b} designs failing per feasible one "
                        "(a majority fails: >= 1)",
                        Ratio(Ptr(f"{DESIGNS}#/gains_per_use_case/use_case=uc4,baseline={b}"
                                  "/not_comparable"),
                              Ptr(f"{DESIGNS}#/gains_per_use_case/use_case=uc4,baseline={b}"
                                  "/comparable")),
                        Bound(1.0, "min"))
             for b in ("multi-DNN-unaware", "transferred", "OODIn")),
         note="Parity tolerance 0.05x: parity means the same design, so the same optimality; 5% "
              "allows for reading equal bars. The failure share is the number of baselines that "
              "break the constraints over the number that meet them (>= 1: at least half fail). "
              "B-A/B-S (trivially 1.0x with one model per task) are not in the paper's Fig. 6."),
    Item(P, "Table 7", "RASS's designs and switching policy, UC1 on the S20 FE",
         claim="UC1 on S20: " + "; ".join(f"{r} = {T7[r]}" for r in ROLES)
               + "; the policy moves CPU -> GPU -> NPU (columns c_CPU, c_GPU, c_NPU).",
         comparisons=(
             Comparison("policy's processor order", Ptr(f"{DESIGNS}#/policies/uc1_s20fe/triggers"),
                        Order(("CPU", "GPU", "NPU"))),
         ) + tuple(Comparison(f"{r}", Ptr(f"{QUICKSTART}#/designs/{r}", source="profile_source"),
                              Is(T7[r])) for r in ROLES),
         note="RASS on the modelled S20 FE profile (reports/quickstart, 328 configurations). "
              "dwm is compared with the paper's dw (its row says dwm = dw)."),
    Item(P, "Fig. 7", "runtime behaviour, single-DNN (UC1 on the S20 FE)",
         claim="Under a gradual CPU overload and then a memory issue, the runtime manager goes "
               "d0 (EfficientNet Lite0 FFX8, CPU) -> d1 (Lite0 FP16, GPU) -> dm (on the CPU), "
               "keeping accuracy (75.11% on d0, 16 MB).",
         comparisons=(
             Comparison("designs visited under the paper's events (modal sequence of the rounds)",
                        Ptr(f"{CARIN_RT}#/fig7/modal_sequence"), Order(("d0", "d1", "dm"))),
             Comparison("share of rounds visiting exactly the paper's sequence",
                        Ptr(f"{CARIN_RT}#/fig7/share_matching_paper"), Bound(0.6, "min")),
             Comparison("accuracy kept: dm's measured accuracy minus d0's (points)",
                        Ptr(f"{CARIN_RT}#/fig7/accuracy_change_d0_to_dm_pt"),
                        Near(0.0, 1.0, " pt"), " pt")),
         note="Measured on this machine (benchmarks/bench_carin_runtime.py) with the host's "
              "UC1-shaped h1 models and RASS's designs on the measured host profile, under the "
              "paper's two events: a real stress process on the core of d0's engine (CPU[0,1]) "
              "that d1's (CPU[0]) does not use, then a real memory-hungry process. The engines "
              "are CPU core sets, not the S20's CPU and GPU. A single run can differ (a shared "
              "2-core VM), so the rounds' modal sequence is compared and at least 3 rounds in "
              "5 must visit exactly the paper's sequence. Accuracy: the paper's dm is d0's "
              "model in another precision (Lite0 FX8 for FFX8), so accuracy is kept; the "
              "host's dm is another model, and its measured accuracy (profiles/host.json, 270 "
              "test images, one image 0.37 points) is compared with d0's within 1 point. The "
              "runtime report's six-event run (reports/runtime) is another experiment, with "
              "its own script."),
    Item(P, "Table 8", "RASS's designs and switching policy, UC3 on the A71",
         claim="UC3 on A71: " + "; ".join(f"{r} = {T8[r]}" for r in ROLES)
               + "; the policy moves DSP -> GPU -> CPU (columns c_DSP, c_GPU, c_CPU).",
         comparisons=(
             Comparison("policy's processor order", Ptr(f"{DESIGNS}#/policies/uc3_a71/triggers"),
                        Order(("DSP", "GPU", "CPU"))),
             Comparison("d0", Ptr(f"{DESIGNS}#/use_cases/uc3/d0/a71"), Is(T8["d0"])),
         ) + tuple(Comparison(f"{r} is the paper's (model, scheme, processor, threads, XNNPACK "
                              "per task)", Ptr(f"{DESIGNS}#/policies/uc3_a71/match/{r}"), Is(True))
                   for r in ROLES[1:]),
         note="RASS on the modelled A71 profile (reports/carin_designs)."),
    Item(P, "Fig. 8", "runtime behaviour, multi-DNN (UC3 on the A71)",
         claim="Starting on d1 (EfficientNet Lite2 on the GPU), a memory issue moves to dm, "
               "saving 92 MB; when the DSP overload ends, to d0; when it returns, to d2 (the "
               "second model to the CPU), not back to the GPU: d1 -> dm -> d0 -> d2.",
         comparisons=(
             Comparison("designs visited under the paper's events (modal sequence; the run "
                        "starts on d0 and the first overload moves it to d1)",
                        Ptr(f"{CARIN_RT}#/fig8/modal_sequence"),
                        Order(("d0", "d1", "dm", "d0", "d2"))),
             Comparison("share of rounds visiting exactly the paper's sequence",
                        Ptr(f"{CARIN_RT}#/fig8/share_matching_paper"), Bound(0.6, "min"))),
         note="Measured on this machine (benchmarks/bench_carin_runtime.py) with the host's "
              "UC3-shaped h3 models under the paper's events: d0's engine (the DSP's analog, "
              "CPU[0]) overloads for real, a real memory hog, the overload ends, the memory "
              "issue ends, the overload returns. The paper's figure starts on d1 (it supposes "
              "the DSP overloaded); ours starts on d0 with no flags, so the paper's sequence is "
              "compared with d0 in front. The last step in the paper (d2, not back to the GPU, "
              "'to mitigate previous concerns of excessive memory usage') is a choice Table 8's "
              "policy alone does not make: the workbench runtime keeps no memory of an earlier "
              "memory issue. The 92 MB saving has no counterpart in the evidence."),
    Item(P, "Table 9", "OODIn's solve time against the decision-space size",
         claim="OODIn must re-solve on every runtime issue: average "
               + ", ".join(f"{_T9[(d, 500)][0]:g}-{_T9[(d, 10000)][0]:g} ms ({n})"
                           for d, n in DEVICES)
               + " from 500 to 10,000 candidates (maximum up to 34.25 ms), against a 3-4 ms "
                 "interpreter load; CARIn switches by look-up. Scale-free: the average grows "
               + ", ".join(f"{_T9_GROWTH[d]:.2f}x ({n})" for d, n in DEVICES)
               + " from 500 to 10,000 candidates.",
         comparisons=tuple(
             Comparison(f"OODIn's average re-solve, 10,000 / 500 candidates ({n} profile)",
                        _solve_growth(d), Within(round(min(_T9_GROWTH.values()), 2),
                                                 round(max(_T9_GROWTH.values()), 2), "x"), "x")
             for d, n in DEVICES),
         note="The phone milliseconds are not comparable with this machine's (ours: 0.01-0.21 "
              "ms on a Xeon, vectorised), so only the growth with the decision space is compared, "
              "against the paper's range over its three phones: our times all come from one "
              "machine, the profiles only change the problem. RASS's look-up takes ~0.11 us here "
              "(min_speedup 91x over OODIn), but the paper gives no time for it ('instantaneous'), "
              "so that ratio has no paper value."),
    Item(P, "Table 10", "model storage of CARIn against OODIn",
         claim="CARIn stores only RASS's designs (2.65-58.70 MB) where OODIn stores every "
               "candidate (6.56-443.10 MB): a reduction of 1.66-19.98x, per use case "
               + _t10_text() + ".",
         data="modelled",
         comparisons=tuple(
             Comparison(f"modelled {uc.upper()} on {n}",
                        Ptr(f"{RUNTIME}#/storage_modelled/use_case={uc},device={d}/reduction"),
                        Gain(_T10[(uc, d)][2], "ratio"), "x")
             for uc in ("uc1", "uc2", "uc3", "uc4") for d, n in DEVICES) + (
             Comparison("this machine, UC1-shaped h1 (model files)",
                        Ptr(f"{RUNTIME}#/storage_host/reduction"),
                        Within(*_t10_range("uc1"), "x"), "x"),
             Comparison("this machine, UC3-shaped h3 (model files)",
                        Ptr(f"{RUNTIME}#/runs/policy=rass,scenario=multi/storage/reduction"),
                        Within(*_t10_range("uc3"), "x"), "x"),
         ),
         note="data=modelled: the per-phone rows (storage_modelled) are modelled inside a file "
              "measured here. This machine's reductions are measured from the bundled model "
              "files (3 of 25 h1 models, 4 of 20 h3 models) and compared with the paper's range "
              "over the three phones for the use case of the same shape (UC1 12.89-19.98x, UC3 "
              "3.50-7.97x), not with the 1.66-19.98x range over all use cases."),
)
