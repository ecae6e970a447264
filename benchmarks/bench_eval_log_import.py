"""Reading an Inspect AI eval log into a `VerdictSet` (`storage.datasets.readers.eval_logs`).

Figures:
    eval_log_import_10k           wall seconds to read a 10,000-sample `.eval` log (median of 3)
    eval_log_import_10k_cpu_s     the same, CPU seconds
    eval_log_import_10k_peak_mb   peak Python memory while reading it (tracemalloc, one more run)
    eval_log_import_10k_file_mb   the log's size on disk
    eval_log_import_load_average  1-minute load average at the end (2 cores, shared)

The log is made here in Inspect's documented `.eval` layout (header.json, then
samples/{id}_epoch_{n}.json, summaries.json), each sample holding what a real one holds around
its scores: chat input, messages, output, a transcript of events and a grader's transcript in
the score metadata, about 9 KB of JSON each. Members are zstd-compressed as Inspect writes them
when `zipfile_zstd` (installed with inspect_ai, a test extra) is there, deflated otherwise (the
line `# members: ...` says which). Four scorers per sample: a single grader, a panel of three
reduced by majority (each vote a judge), a `collect` multi_scorer of two graders, and `match`.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

from benchmarks.figures import bench_line

N_SAMPLES = 10_000
REPEATS = 3


def _compression() -> tuple[int, str]:
    try:
        import zipfile_zstd  # noqa: F401  (patches zipfile to write zstd, as Inspect does)
    except ImportError:
        return zipfile.ZIP_DEFLATED, "deflate"
    return zipfile.ZIP_ZSTANDARD, "zstd"  # type: ignore[attr-defined]


def _model(name: str) -> dict[str, Any]:
    return {"model": name, "config": {}, "base_url": None, "model_args": {}}


def _header() -> dict[str, Any]:
    panel = [_model(f"openai/grader-{n}") for n in range(3)]
    multi = {"scorers": [{"type": "scorer", "name": "model_graded_qa",
                          "params": {"model": _model(f"anthropic/judge-{n}")}} for n in range(2)],
             "reducer": "collect"}
    scores = [("model_graded_qa", {"model": _model("openai/strict")}),
              ("model_graded_qa1", {"model": panel}), ("multi_scorer", multi), ("match", {})]
    return {
        "version": 2, "status": "success",
        "eval": {"eval_id": "bench", "run_id": "bench", "created": "2026-11-29T03:00:00+00:00",
                 "task": "bench_task", "task_id": "bench", "task_version": 0,
                 "dataset": {"samples": N_SAMPLES}, "model": "openai/gpt-4.1-mini",
                 "scorers": [{"name": n.rstrip("1"), "options": p, "metrics": []}
                             for n, p in scores]},
        "plan": {"name": "plan", "steps": []},
        "results": {"total_samples": N_SAMPLES, "completed_samples": N_SAMPLES,
                    "scores": [{"name": n, "scorer": n, "params": p, "metrics": {}}
                               for n, p in scores]},
        "stats": {}, "invalidated": False, "tags": [], "metadata": {},
    }


def _sample(n: int) -> dict[str, Any]:
    question = f"Question {n}: what is {n} + {n}? Explain the steps. " * 3
    answer = f"The answer is {2 * n}. " * 8
    grading = [{"role": "user", "content": "You are assessing a submitted answer. " * 20},
               {"role": "assistant", "content": "Step by step... GRADE: C " * 10}]
    grade = "C" if n % 3 else "I"
    return {
        "id": f"s{n}", "epoch": 1,
        "input": [{"role": "system", "content": "Be precise."},
                  {"role": "user", "content": question}],
        "target": str(2 * n),
        "messages": [{"role": "user", "content": question},
                     {"role": "assistant", "content": answer}],
        "output": {"model": "gpt-4.1-mini", "completion": answer,
                   "choices": [{"message": {"role": "assistant", "content": answer},
                                "stop_reason": "stop"}]},
        "scores": {
            "model_graded_qa": {"value": grade, "answer": answer[:40],
                                "explanation": "The steps add up. GRADE: " + grade,
                                "metadata": {"grading": grading}, "history": []},
            "model_graded_qa1": {"value": "C", "answer": answer[:40],
                                 "metadata": {"grading": grading,
                                              "panel": {"votes": ["C", grade, None], "size": 3,
                                                        "failures": []}}, "history": []},
            "multi_scorer": {"value": [grade, "C"], "answer": answer[:40], "history": []},
            "match": {"value": "I", "answer": answer[:40], "explanation": answer[:40],
                      "history": []},
        },
        "metadata": {"difficulty": n % 5},
        "events": [{"event": "model", "timestamp": "2026-11-29T03:00:00+00:00",
                    "input": grading, "output": {"completion": answer}} for _ in range(2)],
        "model_usage": {}, "total_time": 1.2, "working_time": 1.1, "uuid": f"u{n}",
        "error": None, "attachments": {},
    }


def _write_log(path: Path) -> str:
    method, label = _compression()
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for n in range(N_SAMPLES):
            archive.writestr(f"samples/s{n}_epoch_1.json", json.dumps(_sample(n)))
        archive.writestr("summaries.json", json.dumps([{"id": f"s{n}", "epoch": 1}
                                                       for n in range(N_SAMPLES)]))
        archive.writestr("header.json", json.dumps(_header()))
    return label


def run() -> None:
    from storage.datasets.readers.eval_logs import read_inspect_log

    with tempfile.TemporaryDirectory(prefix="jurybox-bench-evallog-") as tmp:
        path = Path(tmp) / "bench.eval"
        label = _write_log(path)
        print(f"# members: {label}", flush=True)
        walls, cpus = [], []
        for _ in range(REPEATS):
            wall, cpu = time.perf_counter(), time.process_time()
            found = read_inspect_log(path)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        assert len(found.items) == N_SAMPLES and len(found.verdicts) == N_SAMPLES * 6
        del found
        tracemalloc.start()
        read_inspect_log(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        size = path.stat().st_size
    # Literal names (N_SAMPLES = 10,000): tests/test_docs.py finds them.
    bench_line("eval_log_import_10k", statistics.median(walls), "s")
    bench_line("eval_log_import_10k_cpu_s", statistics.median(cpus), "s")
    bench_line("eval_log_import_10k_peak_mb", peak / 1024**2, "MB")
    bench_line("eval_log_import_10k_file_mb", size / 1024**2, "MB")
    bench_line("eval_log_import_load_average", os.getloadavg()[0], "runnable")


if __name__ == "__main__":
    run()
