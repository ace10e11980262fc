"""FlexNN (Li et al., MobiCom '24): the ledger items, one per figure and table, in the paper's order.

The workbench's numbers come from ``reports/bench/flexnn_fig10.json``
(benchmarks/bench_flexnn_fig10.py): Figure 10 on VGG-19, ResNet-152, MobileNetV2 and SqueezeNet
at 224x224 against stand-ins for the paper's three baselines, measured as FlexNN's artifact
measures (the resident set sampled from outside every 10 ms less the idle one); and from
``reports/bench/flexnn_ledger.json`` (benchmarks/bench_flexnn_ledger.py): full-size ResNet-152
and VGG-19 layer memory (Figure 1) and offline overheads (Table 2), the w.o. mem / w.o. preload /
w.o. both ablation in fresh processes (Figure 13), VGG-19 under four budgets in turn (Figure 14)
and single-layer sweeps (Figures 2 and 11). The paper's numbers are from its text and Table 2
(``workbench/data/papers/flexnn.json``); its figures are plots whose values the text does not
give, and none is read off here.
"""

from __future__ import annotations

from .evidence import Agg, Ptr, Ranked, Ratio
from .rules import Bound, Comparison, Gain, Item, Near, Order

P = "flexnn"
#: The full-size measurements of benchmarks/bench_flexnn_ledger.py (Figures 1, 2, 11, 13, 14 and
#: Table 2); its ``fig1_source`` says that Figure 1's numbers are byte counts of the graph.
B = "reports/bench/flexnn_ledger.json"
F1 = "fig1_source"


#: Figure 10 measured as FlexNN's artifact measures (benchmarks/bench_flexnn_fig10.py).
B10 = "reports/bench/flexnn_fig10.json"
#: The paper's baselines and the executor modes that stand in for them.
BASELINES = (("default", "NCNN-Default"), ("direct", "NCNN-Direct"), ("on-demand", "On-Demand"))


def _f10(model: str, base: str, field: str) -> Ptr:
    """A field of one Figure 10 comparison (FlexNN against one baseline on one model)."""
    return Ptr(f"{B10}#/comparisons/model={model},baseline={base}/{field}")


#: What Figure 10's numbers are (benchmarks/bench_flexnn_fig10.py, measured), beside the paper's.
FIG10_NOTE = (
    "Ours (reports/bench/flexnn_fig10.json, benchmarks/bench_flexnn_fig10.py): the paper's "
    "six models, every run a fresh process on this machine measured as FlexNN's artifact "
    'measures (scripts/device/measure-mem.sh and scripts/plot/end2end.py of xxxxyu/FlexNN): '
    "the resident set sampled from outside every 10 ms (pmap -x's total; each run checks the "
    'two readings once) less the idle resident set (the largest sample of a 1 s idle phase '
    'before loading), 4 warm-up and 8 timed inferences (the mean without the smallest and '
    "largest), 5 rounds for VGG-19 and 5 for ResNet-152 (3 for the others) with the modes' "
    'order rotated, latencies compared within a round. NCNN is not run: NCNN-Default is stood'
    ' in for by every weight resident with im2col+GEMM, NCNN-Direct by every weight resident '
    'with direct convolution (there is no Winograd to disable here), On-Demand by each '
    "layer's weights read just before it runs. VGG-19, ResNet-152 and MobileNetV2 at 224x224 "
    '(keras.applications), SqueezeNet v1.1 (built in Keras), ViT-B/16 at 384x384 and GPT-2 '
    "small on 64 tokens (layer graphs built here; GPT-2's head is an untied copy, 163M "
    'parameters stored); random weights. Memory (MB; Default, Direct, On-Demand, FlexNN at '
    'its smallest budget): VGG-19 745.0, 626.0, 453.2, 39.5; ResNet-152 259.7, 251.6, 20.0, '
    "10.0. Memory cuts at FlexNN's smallest budget: VGG-19 94.7%, 93.7% and 91.3%, ResNet-152"
    " 96.2%, 96.0% and 50.3% (Default, Direct, On-Demand). The paper's are 'up to' figures "
    "(each at its own smallest budget), so ours is compared as at least the paper's, less 5 "
    'points; its baselines hold Winograd-transformed weights (NCNN-Default ResNet-152 works '
    'out near 565 MB from 35 MB at 93.81%; ours is 260 MB), which makes its cuts easier, and '
    "ours go lower (10 MB against its 35 MB for ResNet-152). Against ResNet-152's On-Demand "
    "ours cuts twice the paper's 25.21%: On-Demand needs the largest layer's weights and "
    "im2col matrix whole, which FlexNN slices. Latency at the baselines' memory is not "
    'compared (see missing): our FlexNN point at no more memory than Default is far below it '
    "(VGG-19 411 MB against 745), so its latency cut is only a lower bound on the paper's "
    "reading; as measured at FlexNN's largest budget within each baseline's memory (chosen by "
    "memory alone), -5.9% and -14.1% (VGG-19 against Default and Direct; rounds -21.2 to +8.9 "
    "and -16.6 to -1.0), -3.4% and +15.0% (ResNet-152; rounds -10.1 to +22.8 and -1.9 to "
    "+23.4). Our stand-ins are also not the paper's: its NCNN-Direct is a naive "
    'kernel (hence 83.63% and 61.11%), ours is nine shifted GEMMs close to im2col; its On-'
    'Demand reads from flash, ours from warm page-cache pages. The target of the issue (at '
    "least 90% less memory than Default at no more than +10% latency; the paper's 93.81% at "
    "+3.64%) is compared at a point chosen by memory alone, before any latency is read: "
    "FlexNN's largest budget with at least 90% less memory than Default (picking the fastest "
    "such point would pick by the noise it is then checked against). VGG-19 at 70 MB: 90.6% "
    "less memory at +8.9% (5 rounds: -2.0, +5.2, +8.9, +15.5, +25.2; quartiles +5.2 to "
    "+15.5); ResNet-152 at 13.051 MB: 95.0% less at +12.4% (rounds -30.9 to +26.1, quartiles "
    "+3.9 to +21.6); ViT-B/16 at 20.085 MB: 94.4% less at +14.5% (3 rounds, +9.98 to +16.9; "
    "not compared). "
    "Under the ledger's noise rule (the rounds' quartiles inside the tolerance) neither VGG-19 "
    "nor ResNet-152 holds: this machine's round-to-round spread (tens of points on the same "
    "pair) is wider than the target's 10 points, so the target is not shown here, and neither"
    " is its failure: both medians' quartiles straddle +10%. MobileNetV2, SqueezeNet "
    'and GPT-2 have no '
    'point 90% below Default: their floors are set by activations (MobileNetV2, SqueezeNet) '
    "and by GPT-2's 154 MB token embedding, which the executor does not slice; the text's "
    'claim that FlexNN goes below Default and Direct on every model holds on all six. The '
    "artifact plots FlexNN at its budget; measured, FlexNN's runs stay within 0.26 MB of it "
    "on the CNNs and GPT-2 (the executor's fixed 64 kB reserve does not cover about 1 kB of "
    "program objects per step and NumPy's transient arrays), but ViT at its 10.8 MB floor "
    "(3,630 steps) measures 14.5 MB. Known limits of this run: the probe makes FlexNN's plan "
    "before its idle phase, so the idle reading it subtracts holds the plan's objects "
    "(0.0-1.2 MB on the CNNs and GPT-2, 4.8 MB on ViT at its floor: FlexNN's memory reads "
    "that much low); this is still so in the benchmark (open: planning after the idle phase "
    "needs an executor reserve that grows with the step count); and the pmap check ran 0.5 s "
    'into start-up, where the resident set moves, so 39 of 155 runs show up to 8 MB between '
    'pmap and the rollup read a moment later (pmap -x sums the same smaps Rss; the benchmark '
    'now waits for a still resident set, which this file predates). The like-for-like '
    'reading leaves out the page cache, as pmap'
    " does. Inside a memory cgroup, which counts it, with the weight files' pages dropped "
    'first: ResNet-152 at 9.707 MB in a 47.3 MB limit reads all 240.6 MB of its weights from '
    "disk on every inference (+40%, +265 ms; reading that at the disk's measured 991 MB/s "
    'takes 243 ms), VGG-19 at 39.404 MB in 81.3 MB reads 574.8 MB (+46%, +821 ms, of which '
    'the disk accounts for 415): the limit leaves no room to keep what was read, so each '
    'inference evicts and re-reads the weights; with room for the weight files nothing is '
    'read after the first inference. A device under memory pressure is in the first case.')


def _abl(model: str, budget: float, mode: str, field: str = "latency_vs_flexnn_pct") -> Ptr:
    """Figure 13: a mode's latency over FlexNN's, paired per round: the median
    (``latency_vs_flexnn_pct``) or the rounds (``latency_vs_flexnn_rounds_pct``)."""
    return Ptr(f"{B}#/fig13_points/model={model},mode={mode},budget_mb={budget:g}/{field}")

ITEMS: tuple[Item, ...] = (
    Item(
        P, "Figure 1", "layer-wise memory usage of DNNs",
        claim=("the layer-wise memory is very unbalanced: in ResNet-152, 79.6% of the layers use "
               "no more than 5 MB, 99.4% no more than 20 MB, and only 0.6% more than 70 MB "
               "(section 2.2)"),
        comparisons=(
            Comparison("ResNet-152 layers using at most 5 MB (ours: 210 layers of the graph)",
                       Ptr(f"{B}#/fig1_summary/model=ResNet-152/share_le_5mb_pct", source=F1),
                       Near(79.6, 10.0, "%"), "%"),
            Comparison("ResNet-152 layers using at most 20 MB",
                       Ptr(f"{B}#/fig1_summary/model=ResNet-152/share_le_20mb_pct", source=F1),
                       Near(99.4, 10.0, "%"), "%"),
            Comparison("ResNet-152 layers using more than 70 MB",
                       Ptr(f"{B}#/fig1_summary/model=ResNet-152/share_gt_70mb_pct", source=F1),
                       Near(0.6, 0.5, "%"), "%"),
        ),
        note=("Ours is ResNet-152 at 224x224 from keras.applications, each layer's memory read "
              "from the graph: its inputs, output, weights and im2col intermediates in float32 "
              "(exact byte counts of the structure, so no repetitions). The graphs count layers "
              "differently: ours folds BatchNorm and ReLU into the convolution and has no Split "
              "layers (210 layers: 155 conv, 50 add, 2 zero-pad, pool, global pool, FC); the "
              "paper's NCNN graph has about 500 if its 0.6% is 3 layers. That moves the share of "
              "small layers by several points, hence a 10-point tolerance on the first two "
              "shares, and half a point (one layer of either graph is 0.2-0.5 points) on the "
              "third. The third fails for a known reason: the paper's layers over 70 MB come "
              "from Winograd (a 3x3 512-channel conv's 9.4 MB of weights become about 67 MB "
              "transformed); there is no Winograd kernel here, and our largest ResNet-152 layer "
              "is 11.3 MB (conv1 with its 7.4 MB im2col matrix; then the three conv5 3x3 convs "
              "at 10.7 MB each, median layer 2.9 MB). Not compared (section 2.2's paragraph C "
              "has no figure): the weights are 99.97% of VGG-19's largest FC here as in the "
              "paper (99.97%), and the im2col matrix 83.3% of VGG-19's second conv (paper 74.75%)."),
    ),
    Item(
        P, "Figure 2", "latency-memory trade-off among 3 kernels of a 3x3 Conv",
        claim=("among Direct Conv, Im2col+GeMM and Winograd for one 3x3 Conv, Winograd has the "
               "lowest latency but uses the most memory: latency and memory are negatively "
               "correlated (section 2.2; the per-kernel values are only in the plot)"),
        reading=("the caption's negative correlation over three kernels with Winograd fastest and "
                 "largest is read as: Direct slowest and smallest, Im2col+GeMM between"),
        comparisons=(
            Comparison("3x3 Conv 112x112x128 (VGG-19's block2_conv2), slowest first",
                       Ranked(Ptr(f"{B}#/fig2_kernels"), "latency_ms", "kernel"),
                       Order(("direct", "im2col"))),
            Comparison("the same conv, most memory first (inputs, output, weights and the "
                       "kernel's intermediates)",
                       Ranked(Ptr(f"{B}#/fig2_kernels"), "memory_mb", "kernel"),
                       Order(("im2col", "direct"))),
        ),
        missing=("Winograd: there is no Winograd kernel here (the NumPy executor has im2col+GEMM "
                 "and direct convolution only)"),
        note=("One thread, 7 interleaved runs each: im2col+GEMM 68.2 ms (quartiles 67.3-68.7) "
              "with a 64.5 MB im2col matrix (tracemalloc peak of the call 64.5 MB), direct 43.9 "
              "ms (42.9-44.3) with 13.1 MB (a padded input and one output-sized accumulator). "
              "The memory order is the paper's; the latency order is not: this executor's direct "
              "kernel is nine shifted GEMMs accumulated in place, not a naive loop, and on this "
              "CPU it is faster than building the im2col matrix. So here the two kernels do not "
              "trade latency for memory (the workbench's slicing still tries im2col first)."),
    ),
    Item(
        P, "Table 1", "device specifications", kind="setup",
        claim=("three Armv8-A devices: Google Pixel 6 Pro (2x2.80 GHz Cortex-X1, 2x2.25 GHz "
               "Cortex-A76, 4x1.80 GHz Cortex-A55; 12 GB), Xiaomi Mi MIX 2S (4x2.8 GHz Kryo 385 "
               "Gold, 4x1.8 GHz Kryo 385 Silver; RAM printed as 4 GB) and Raspberry Pi 4B (4x1.8 "
               "GHz Cortex-A72; 8 GB)"),
        note=("none of these devices is here: every FlexNN number in the ledger is from this "
              "machine (x86, NumPy kernels, one compute and one loader thread), whose CPU "
              "changes from day to day: an Intel Xeon for the earlier sections, an AMD EPYC for "
              "Figure 10 and Table 2; each benchmark file records the CPU per section"),
    ),
    Item(
        P, "Figure 10", "end-to-end latency and memory across devices and models",
        claim=("on a Pixel 6 Pro FlexNN cuts peak memory by up to 92.95%, 90.01% and 85.13% "
               "(VGG-19) and 93.81%, 85.45% and 25.21% (ResNet-152) against NCNN-Default, "
               "NCNN-Direct and On-Demand, and under the same memory budgets cuts latency by "
               "about 6.37%, 83.63% and 58.33% (VGG-19) and 11.08%, 61.11% and 63.33% "
               "(ResNet-152); its headline point is 93.81% less memory at a 3.64% latency "
               "increase on ResNet-152; it supports lower budgets than NCNN-Default and "
               "NCNN-Direct on all six models (section 5.2)"),
        comparisons=(
            *(Comparison(f"{model}: memory cut vs {name} ({base} here) at FlexNN's smallest "
                         "budget (the paper's 'up to': at least its cut, less 5 points)",
                         _f10(model, base, "memory_cut_pct"), Bound(paper - 5.0, "min", "%"), "%")
              for model, cuts in (("VGG-19", (92.95, 90.01, 85.13)),
                                  ("ResNet-152", (93.81, 85.45, 25.21)))
              for (base, name), paper in zip(BASELINES, cuts)),
            *(Comparison(f"{model}: latency at FlexNN's largest budget with at least 90% "
                         "less memory than NCNN-Default (chosen by memory alone), over "
                         "Default's, paired per round (the paper's 93.81% at +3.64%; the "
                         "issue's target: at most +10%)",
                         Ptr(f"{B10}#/best90/model={model}/latency_vs_default_pct"),
                         Bound(10.0, "max", "%"), "%",
                         rounds=Ptr(f"{B10}#/best90/model={model}/"
                                    "latency_vs_default_rounds_pct"))
              for model in ("VGG-19", "ResNet-152")),
            *(Comparison(f"{model}: memory cut vs {name} at FlexNN's smallest budget (the "
                         "text: lower than NCNN-Default and NCNN-Direct on all models)",
                         _f10(model, base, "memory_cut_pct"), Bound(0.0, "min", "%"), "%")
              for model in ("VGG-19", "ResNet-152", "MobileNetV2", "SqueezeNet", "ViT", "GPT-2")
              for base, name in BASELINES[:2]),
        ),
        missing=("the latency cuts 'under the same memory budgets' (6.37/83.63/58.33% on "
                 "VGG-19, 11.08/61.11/63.33% on ResNet-152): the benchmark's FlexNN budgets stop "
                 "below 0.9x Default and below On-Demand's measured memory, so FlexNN was not "
                 "run at any baseline's memory; and the Mi MIX 2S and Raspberry Pi curves (no "
                 "such device here)"),
        note=FIG10_NOTE,
    ),
    Item(
        P, "Figure 11", "layer-wise latency-memory trade-off of layer slicing",
        claim=("on one FC (weights slicing) and one 3x3 Conv (input slicing) on a Pixel 6 Pro, "
               "latency falls as the memory (slice size) grows, flattening for input slicing "
               "(hence a fixed slice size of 32); for weights slicing the latency without "
               "preloading rises as memory shrinks while with preloading it stays almost unchanged "
               "(section 5.3; the values are only in the plot)"),
        comparisons=(
            Comparison("FC 4096x4096 without preloading, slowest first: 1/32 vs 1/2 of its "
                       "weights in memory (both streamed every inference)",
                       Ranked(Ptr(f"{B}#/fig11_fc"), "latency_ms", "budget",
                              where=(("preload", False),), only=("1/32", "1/2")),
                       Order(("1/32", "1/2"))),
            Comparison("FC with preloading: latency at 1/32 of the weights over latency at 1/2",
                       Ratio(Ptr(f"{B}#/fig11_fc/budget=1~132,preload=True/latency_ms"),
                             Ptr(f"{B}#/fig11_fc/budget=1~12,preload=True/latency_ms")),
                       Near(1.0, 0.2, "x"), "x"),
            Comparison("FC at 1/32 of its weights, slowest first",
                       Ranked(Ptr(f"{B}#/fig11_fc"), "latency_ms", "mode",
                              where=(("budget", "1/32"),)),
                       Order(("w.o. preload", "preload"))),
            Comparison("3x3 Conv 112x112x128, slowest first: 1-row im2col slices vs the whole "
                       "matrix",
                       Ranked(Ptr(f"{B}#/fig11_conv"), "latency_ms", "band",
                              only=("1 row", "whole")),
                       Order(("1 row", "whole"))),
        ),
        note=("Ours: VGG's 4096x4096 FC planned alone at budgets of 1/32 to twice its 67 MB of "
              "weights (64 to 2 weight slices; at 1 and 2 the weights are pinned and nothing is "
              "read), and VGG-19's block2_conv2 run with im2col bands of 1 row to the whole "
              "matrix (0.5 to 57.8 MB); one thread, medians of 15 (FC) and 11 (conv) "
              "interleaved runs. 'Almost unchanged' is taken as within a fifth. FC with "
              "preloading: 12.2, 13.7, 13.0, 13.2, 16.0 ms from 1/32 to 1/2 (5.3 ms pinned); "
              "without: 16.2, 14.7, 16.4, 18.4, 17.5 ms: preloading saves 6-28% at every sliced "
              "budget, but neither curve rises as memory shrinks (both fall slightly: more, "
              "smaller reads overlap better here), so 'rises' fails and 'almost unchanged' "
              "misses by a little (0.76x). Conv: 56.5, 54.9, 52.7, 52.1, 53.4, 55.5, 57.8 ms for "
              "1, 2, 4, 8, 16, 32 rows and the whole matrix: a shallow U (the whole matrix is "
              "slowest, as it leaves the cache), within 11% everywhere, not the paper's falling "
              "curve."),
    ),
    Item(
        P, "Figure 12", "real-time power consumption",
        claim=("on a Pixel 6 Pro FlexNN's peak power is similar to NCNN's, but its longer "
               "inference raises energy by 1.02% on ResNet-152 and 28.39% on VGG-19 (section 5.4; "
               "the plot is VGG-19 for 8 loops)"),
        missing=("power or energy of FlexNN and bulk inference: the paper reads a phone battery's "
                 "current and voltage; phones are not here and this machine exposes no power "
                 "sensor to the workbench, so no power was measured"),
    ),
    Item(
        P, "Table 2", "storage and time overheads of FlexNN",
        claim=("transformed-weights storage 781/547/337 MB, layer slicing 2,458.96/2,228.76/888.84 "
               "ms, profiling 689.25/540.94/1,438.84 ms and memory planning 5.27/864.67/390.55 ms "
               "(VGG-19, ResNet-152 at 100 MB, ViT at 300 MB); the caption's claim: memory "
               "planning, the only step repeated when the budget changes, stays within 1 s"),
        comparisons=(
            Comparison("VGG-19 @ 100 MB: memory planning",
                       Ptr(f"{B}#/table2/model=VGG-19/planning_ms"),
                       Bound(1000.0, "max", " ms"), " ms"),
            Comparison("ResNet-152 @ 100 MB: memory planning",
                       Ptr(f"{B}#/table2/model=ResNet-152/planning_ms"),
                       Bound(1000.0, "max", " ms"), " ms"),
            Comparison("VGG-19: stored (sliced) weights over the model's fp32 parameters",
                       Ptr(f"{B}#/table2/model=VGG-19/storage_ratio"),
                       Gain(1.359, "ratio"), "x"),
            Comparison("ResNet-152: stored (sliced) weights over the model's fp32 parameters",
                       Ptr(f"{B}#/table2/model=ResNet-152/storage_ratio"),
                       Gain(2.263, "ratio"), "x"),
            Comparison("VGG-19 @ 100 MB: layer slicing (choosing the slices and writing the "
                       "sliced weight files)",
                       Ptr(f"{B}#/table2/model=VGG-19/slicing_ms"),
                       Near(2458.96, 1229.48, " ms"), " ms"),
            Comparison("ResNet-152 @ 100 MB: layer slicing",
                       Ptr(f"{B}#/table2/model=ResNet-152/slicing_ms"),
                       Near(2228.76, 1114.38, " ms"), " ms"),
            Comparison("VGG-19: profiling (every tensor's size and lifecycle)",
                       Ptr(f"{B}#/table2/model=VGG-19/profiling_ms"),
                       Near(689.25, 344.63, " ms"), " ms"),
            Comparison("ResNet-152: profiling",
                       Ptr(f"{B}#/table2/model=ResNet-152/profiling_ms"),
                       Near(540.94, 270.47, " ms"), " ms"),
            Comparison("ViT @ 300 MB: memory planning",
                       Ptr(f"{B}#/table2/model=ViT/planning_ms"),
                       Bound(1000.0, "max", " ms"), " ms"),
            Comparison("ViT: stored (sliced) weights over the model's fp32 parameters",
                       Ptr(f"{B}#/table2/model=ViT/storage_ratio"),
                       Near(0.97, 0.05, "x"), "x"),
            Comparison("ViT @ 300 MB: layer slicing",
                       Ptr(f"{B}#/table2/model=ViT/slicing_ms"),
                       Near(888.84, 444.42, " ms"), " ms"),
            Comparison("ViT: profiling",
                       Ptr(f"{B}#/table2/model=ViT/profiling_ms"),
                       Near(1438.84, 719.42, " ms"), " ms"),
        ),
        note=("Ours: VGG-19 and ResNet-152 at 224x224 (keras.applications, random weights) at "
              "the paper's 100 MB, and ViT-B/16 at 384x384 (built as a layer graph, 86.9M "
              "parameters) at its 300 MB; each timing the median of 5 (quartiles in the file): "
              "planning 5.3 ms (5.2-5.4), 1,754 ms (1,632-1,813) and 1,707 ms (1,653-1,710); "
              "slicing 1.1 ms to choose plus 1,073 ms (987-1,356) to write 575 MB of slices, "
              "4.3 + 255 ms for ResNet-152's 240 MB and 1.9 + 339 ms for ViT's 347 MB; "
              "profiling 0.50, 2.21 and 1.24 ms. ResNet-152's and ViT's planning miss the 1 s "
              "bound: the planner bisects how many weights to pin (78 of ResNet-152's 100 MB, "
              "276 of ViT's 300 MB are pinned) and plans every step again for each try. "
              "Storage: the paper's ratios are its 781, 547 and 337 MB over the architectures' "
              "fp32 parameters (143.67M = 574.7 MB for VGG-19; 60.42M = 241.7 MB for ResNet-152, "
              "the Keras count, which ours uses too; 86.86M = 347.4 MB for ViT-B/16 at 384). "
              "The CNNs' growth is Winograd's transformed weights; here the only "
              "pre-transformation is the im2col layout, which keeps the size (1.00x, and 0.995x "
              "for ResNet-152 with BatchNorm folded). ViT has no convolution to transform: the "
              "paper's 337 MB is 0.97x its parameters, ours 1.00x, compared within 0.05x. Times: "
              "a different CPU and implementation, so only the scale is compared, within half "
              "the paper's value either way. Profiling here reads every tensor's size and "
              "lifetime from the graph, which knows its shapes; FlexNN's profiling runs the NCNN "
              "model, which is why ours is hundreds of times cheaper. Not FlexNN's: the latency "
              "profile the workbench's what-if simulator uses (measure_layer_times) is not timed "
              "here. The earlier 32x32 planning times (2.6 ms at most, reports/flexnn/"
              "metrics.json) are superseded by these full-size ones."),
    ),
    Item(
        P, "Figure 13", "ablation study",
        claim=("with static memory management replaced by NCNN's native allocator (w.o.mem), "
               "parallel preloading replaced by on-demand loading (w.o.preload), or both "
               "(w.o.both), FlexNN is slower under the same memory budget: both components reduce "
               "latency (section 5.5; the bars are only in the plot)"),
        comparisons=tuple(
            Comparison(f"{model} @ {budget:g} MB: {mode} latency over FlexNN's (paired per "
                       "round)",
                       _abl(model, budget, mode), Bound(0.0, "min", "%"), "%",
                       rounds=_abl(model, budget, mode, "latency_vs_flexnn_rounds_pct"))
            for model, budget in (("ResNet-50", 11.503), ("ResNet-50", 23.005),
                                  ("VGG-16", 70.78), ("VGG-16", 141.56))
            for mode in ("flexnn w.o. mem", "flexnn w.o. preload", "flexnn w.o. both")),
        note=("Ours: ResNet-50 and VGG-16 at 224x224 at 10% and 20% of their bulk peaks (the "
              "full-size budgets of Figure 10), every run a fresh process, 3 rounds of 3 timed "
              "inferences with the four modes' order rotated each round; each comparison is "
              "the median over rounds of the mode's latency over FlexNN's in the same round "
              "(this machine drifts; other work shared its 2 cores: the 1-minute load went "
              "from 1.26 to 2.2 during the section, and VGG-16's FlexNN medians were 517-572 "
              "ms against 365-393 ms when it was quiet). With 3 rounds a comparison holds only if every "
              "round is slower than FlexNN's (the ledger's noise rule): 5 of 12 do (VGG-16 @ "
              "141.6 MB all three, VGG-16 @ 70.78 MB w.o. mem, ResNet-50 @ 11.5 MB w.o. "
              "preload); the other medians of +2.6% to +11.2% have a round where the ablation "
              "was faster. w.o. mem runs the same plan (slices, "
              "load order and load times) with every tensor a fresh array from the allocator, "
              "freed after its last use, instead of its address in the static buffer "
              "(NativeAllocRunner). Paired increases (w.o. mem, w.o. preload, w.o. both): "
              "ResNet-50 @ 11.5 MB +2.9, +7.4, +11.2%; @ 23.0 MB +10.3, +2.6, +2.6%; VGG-16 @ "
              "70.78 MB +10.1, +7.4, -0.2%; @ 141.6 MB +17.4, +45.5, +33.5%. Medians over "
              "rounds do not always keep that order (ResNet-50 @ 11.5 MB: FlexNN 138.2 ms, "
              "w.o. mem 124.4 ms). The paper compares latency only; memory shows what the "
              "static buffer buys here: w.o. mem's process peak exceeds the budget by 49-96% "
              "(ResNet-50 22.6 MB at 11.5, 38.6 at 23.0; VGG-16 116.0 MB at 70.78, 229.8 at "
              "141.6): the allocator keeps freed memory and the loader thread's arena, while "
              "the plan's own buffer stays at its budget. w.o. both (no loader thread) peaks "
              "below the budget. The 'w.o. slicing' rows of reports/flexnn/metrics.json ablate "
              "something the paper does not and are not used."),
    ),
    Item(
        P, "Figure 14", "latency and memory under changing memory budgets",
        claim=("switching VGG-19 between four memory budgets on a phone, FlexNN meets each budget, "
               "runs faster under larger budgets, and each adaptation (pause, release, re-plan, "
               "re-allocate, resume) takes approximately 1 second in total (section 5.6)"),
        comparisons=(
            Comparison("time per adaptation (mean of the three budget changes, VGG-19)",
                       Agg(Ptr(f"{B}#/fig14_segments"), "adapt_ms", "mean",
                           (("initial", False),)),
                       Bound(1000.0, "max", " ms"), " ms"),
            Comparison("memory over the budget, worst of the four budgets (process peak over "
                       "its baseline)",
                       Agg(Ptr(f"{B}#/fig14_segments"), "over_budget_pct", "max"),
                       Bound(1.0, "max", "%"), "%"),
            Comparison("budgets by latency, slowest first",
                       Ranked(Ptr(f"{B}#/fig14_segments"), "latency_ms", "budget"),
                       Order(("80 MB", "150 MB", "300 MB", "600 MB"))),
        ),
        note=("Ours: full-size VGG-19 (random weights) in one fresh process that reads its "
              "weights from files, set to 300, 80, 150 and 600 MB in turn (process budgets; the "
              "plan gets 64 KB less) with 32 inferences each, as the paper runs 32. Adaptation "
              "(FlexNN.adapt: re-slice only when the old slicing no longer fits, re-plan, "
              "release and re-allocate the buffer, load the pinned weights): 9.5 ms (to 80 MB, "
              "re-sliced), 9.4 ms (to 150 MB) and 431 ms (to 600 MB, of which 381 ms reads the "
              "weights it pins), mean 150 ms: under the paper's second. An adaptation time is a cost "
              "the paper reports as acceptable, so it is compared as a bound (at most the "
              "paper's), as OODIn Fig. 8's detection times are; a faster machine passing it "
              "says nothing about the phone's absolute time. Memory: "
              "the peak resident set over the pre-model baseline is 300.13, 80.24, 150.25 and "
              "600.27 MB (within 0.3%, the tolerance being 1% of the budget, what a plot at the "
              "budget line shows); the harness's records were allocated before the baseline. "
              "Latency (median of the 31 inferences after the first; quartiles in the file): "
              "643 ms at 300, 573 at 80, 662 at 150 and 611 at 600 MB: not faster under larger "
              "budgets. At 150 and 600 MB FlexNN keeps the 80 MB slicing (as the paper's "
              "adaptation does when it still fits), so more memory only pins or preloads more, "
              "which this machine's page-cache reads do not need; full-size VGG-16 in Figure 10 "
              "shows the same. Other work shared the 2 cores (1-minute load 1.04 to 1.44)."),
    ),
)
