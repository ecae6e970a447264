"""Many raters, sparse answers: 20,000 items x 1,000 raters x 5 answers per item.

Seeded synthetic crowd data with known truth (4 labels, each rater right with its own
probability between 0.55 and 0.95, wrong answers spread over the other labels): 100,000
answers, 2% of the items x raters cells. Before the answers' way, Dawid-Skene built a dense
raters x items x labels array here (620 s, 1.25 GB), pairwise kappa took 161 s and leave-one-out
alpha 582 s.

Figures (medians of 3 runs; the machine is shared, so the load average is printed with them):
    sparse_dawid_skene_s              long table (DataFrame) -> encode_answer_frame -> dawid_skene
                                      (200 EM iterations at most, tol 1e-7 per item)
    sparse_dawid_skene_peak_mb        peak traced memory of the same (tracemalloc)
    sparse_dawid_skene_rss_mb         peak resident memory of a fresh process doing only that,
                                      interpreter, numpy and pandas included (VmHWM)
    sparse_crowdkit_dawid_skene_s     crowd-kit's DawidSkene().fit_predict on the same
                                      DataFrame, in crowd-kit's own environment
    sparse_dawid_skene_vs_crowdkit    ours / crowd-kit's wall time (target: <= 2)
    *_cpu_s, *_vs_crowdkit_cpu        the same in process CPU time, robust to a busy machine
    sparse_dawid_skene_accuracy       share of items whose consensus is the true label (ours)
    sparse_crowdkit_accuracy          the same for crowd-kit
    sparse_same_label_as_crowdkit     share of items where the two consensus labels agree
    sparse_pairwise_kappa_s           kappa for every pair of raters from the answers
    sparse_loo_alpha_s                alpha without each rater, from the answers
    sparse_load_average_1m(_after)    the 1-minute load average before and after the figures

crowd-kit (1.4.2 pulls in transformers and scikit-learn) lives in its own environment: the
Python named by JURYBOX_CROWDKIT_PYTHON, else `.venv-crowdkit/bin/python` at the repository root
(`python3 -m venv .venv-crowdkit && .venv-crowdkit/bin/pip install crowd-kit==1.4.2`), else this
Python if it can import crowdkit. Without any, the crowd-kit figures are skipped with a note.
"""

from __future__ import annotations

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np
import pandas as pd

from benchmarks.figures import bench_line, median_seconds
from judging.agreement import encode_answer_frame, leave_one_out_alpha, pairwise_kappa
from judging.voting.dawid_skene import dawid_skene

ROOT = pathlib.Path(__file__).resolve().parent.parent
N_ITEMS = 20_000
N_RATERS = 1_000
PER_ITEM = 5
N_LABELS = 4
REPEATS = 3

# Run by crowd-kit's Python: times DawidSkene on the same long table, writes its labels.
_CROWDKIT_SCRIPT = """
import json, statistics, sys, time
import numpy as np, pandas as pd
from crowdkit.aggregation import DawidSkene
data = np.load(sys.argv[1])
frame = pd.DataFrame({"task": data["item"], "worker": data["rater"], "label": data["label"]})
times, cpu = [], []
for _ in range(int(sys.argv[3])):
    start, start_cpu = time.perf_counter(), time.process_time()
    model = DawidSkene()
    labels = model.fit_predict(frame)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
np.save(sys.argv[2], labels.reindex(np.arange(int(data["n_items"]))).to_numpy())
import crowdkit
print(json.dumps({"seconds": statistics.median(times), "cpu": statistics.median(cpu),
                  "iterations": len(model.loss_history_),
                  "version": getattr(crowdkit, "__version__", "?")}))
"""

# Run by a fresh Python of ours: peak resident memory of the Dawid-Skene fit alone.
_RSS_SCRIPT = """
import sys
import numpy as np, pandas as pd
from judging.agreement import encode_answer_frame
from judging.voting.dawid_skene import dawid_skene
def high_water():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
data = np.load(sys.argv[1])
frame = pd.DataFrame({"item": data["item"], "rater": data["rater"], "label": data["label"]})
before = high_water()
dawid_skene(encode_answer_frame(frame))
print(before, high_water())
"""


def crowd_answers(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """The long table (item, rater, label as ints) and the true label of each item."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, N_LABELS, N_ITEMS)
    accuracy = rng.uniform(0.55, 0.95, N_RATERS)
    item = np.repeat(np.arange(N_ITEMS), PER_ITEM)
    rater = np.concatenate([rng.choice(N_RATERS, PER_ITEM, replace=False)
                            for _ in range(N_ITEMS)])
    right = rng.random(len(item)) < accuracy[rater]
    wrong = (truth[item] + rng.integers(1, N_LABELS, len(item))) % N_LABELS
    label = np.where(right, truth[item], wrong)
    frame = pd.DataFrame({"item": item, "rater": rater, "label": label})
    return frame, truth


def _crowdkit_python() -> str | None:
    named = os.environ.get("JURYBOX_CROWDKIT_PYTHON")
    candidates = [named] if named else [str(ROOT / ".venv-crowdkit" / "bin" / "python"),
                                        sys.executable]
    for python in candidates:
        if python and pathlib.Path(python).exists():
            probe = subprocess.run([python, "-c", "import crowdkit"], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


def _ours(frame: pd.DataFrame) -> tuple[np.ndarray, int]:
    """Our consensus label per item (items in order: 0, 1, 2, ...) and EM's iterations."""
    model = dawid_skene(encode_answer_frame(frame))
    return np.asarray(model.labels)[model.posteriors.argmax(axis=1)], model.iterations


def run() -> None:
    frame, truth = crowd_answers()
    bench_line("sparse_load_average_1m", os.getloadavg()[0], "")

    times, cpu = [], []
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        ours, iterations = _ours(frame)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    ours_s, ours_cpu = statistics.median(times), statistics.median(cpu)
    bench_line("sparse_dawid_skene_s", ours_s, "s")
    bench_line("sparse_dawid_skene_cpu_s", ours_cpu, "s")
    print(f"# ours: {iterations} EM iterations", flush=True)
    bench_line("sparse_dawid_skene_accuracy", float((ours == truth).mean()), "")

    tracemalloc.start()
    _ours(frame)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    bench_line("sparse_dawid_skene_peak_mb", peak / 2**20, "MiB")

    with tempfile.TemporaryDirectory() as tmp:
        data = pathlib.Path(tmp) / "answers.npz"
        np.savez(data, item=frame["item"].to_numpy(), rater=frame["rater"].to_numpy(),
                 label=frame["label"].to_numpy(), n_items=N_ITEMS)
        rss = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, str(data)], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        before, peak_rss = (float(x) for x in rss.stdout.split()[-2:])
        print(f"# {before:.0f} MiB resident before the fit (interpreter, imports, the table)",
              flush=True)
        bench_line("sparse_dawid_skene_rss_mb", peak_rss, "MiB")

        python = _crowdkit_python()
        if python is None:
            print("# crowd-kit not found (set JURYBOX_CROWDKIT_PYTHON, or: python3 -m venv "
                  ".venv-crowdkit && .venv-crowdkit/bin/pip install crowd-kit==1.4.2): "
                  "its figures are skipped", flush=True)
        else:
            labels_path = pathlib.Path(tmp) / "crowdkit_labels.npy"
            done = subprocess.run([python, "-c", _CROWDKIT_SCRIPT, str(data), str(labels_path),
                                   str(REPEATS)], capture_output=True, text=True, check=True)
            theirs = json.loads(done.stdout.strip().splitlines()[-1])
            their_labels = np.load(labels_path, allow_pickle=True)
            print(f"# crowd-kit {theirs['version']} ({python}): {theirs['iterations']} EM "
                  "iterations (its defaults: at most 100, tol 1e-5)", flush=True)
            bench_line("sparse_crowdkit_dawid_skene_s", theirs["seconds"], "s")
            bench_line("sparse_crowdkit_dawid_skene_cpu_s", theirs["cpu"], "s")
            bench_line("sparse_dawid_skene_vs_crowdkit", ours_s / theirs["seconds"], "x")
            bench_line("sparse_dawid_skene_vs_crowdkit_cpu", ours_cpu / theirs["cpu"], "x")
            bench_line("sparse_crowdkit_accuracy", float((their_labels == truth).mean()), "")
            bench_line("sparse_same_label_as_crowdkit", float((their_labels == ours).mean()), "")

    answers = encode_answer_frame(frame)
    bench_line("sparse_pairwise_kappa_s",
               median_seconds(lambda: pairwise_kappa(answers), REPEATS), "s")
    bench_line("sparse_loo_alpha_s",
               median_seconds(lambda: leave_one_out_alpha(answers), REPEATS), "s")
    bench_line("sparse_load_average_1m_after", os.getloadavg()[0], "")


if __name__ == "__main__":
    run()
