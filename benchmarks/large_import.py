"""Importing a large dataset, as `jurybox judge` does it (`read_dataset(stream=True)` then
`save_dataset`), from CSV and from Parquet: each in a fresh process, measured from outside.

Not a `bench_*` module (`make bench` does not run it): it writes and reads N-row files, so it
sits behind `make bench-large`. `JURYBOX_BENCH_ITEMS` sets N (default 1,000,000); the import
limits are raised for it as docs/storage.md ("Scaling") says.

Figures (<n> is the size: 1m, 100k, ...), medians of 3:
    import_<n>_csv_s, import_<n>_parquet_s              wall time of the import
    import_<n>_csv_peak_rss_mb, import_<n>_parquet_peak_rss_mb
                                                        the importing process's peak memory
"""

from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from benchmarks.figures import bench_line, large_import_env, size_tag

# Run in a child, so each import's peak memory is its own.
# Peak memory from VmHWM: ru_maxrss would carry over the parent's size from before the exec.
_IMPORT = """
import sys, time
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.datasets.importing import read_dataset
start = time.perf_counter()
parsed = read_dataset(sys.argv[1], id_column="id", stream=True)
db = open_db(sys.argv[2])
save_dataset(db, parsed, name="large import")
db.close()
wall = time.perf_counter() - start
with open("/proc/self/status", encoding="ascii") as status:
    peak_kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
print(wall, peak_kb)
"""


def _write(workdir: pathlib.Path, n: int) -> dict[str, pathlib.Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = [f"c{i:07d}" for i in range(n)]
    texts = [f"Candidate class number {i} with a few words" for i in range(n)]
    parents = [f"Parent group {i % 97}" for i in range(n)]
    csv = workdir / "items.csv"
    with csv.open("w", encoding="utf-8") as out:
        out.write("id,text,parent\n")
        out.writelines(f"{a},{b},{c}\n" for a, b, c in zip(ids, texts, parents, strict=True))
    parquet = workdir / "items.parquet"
    pq.write_table(pa.table({"id": ids, "text": texts, "parent": parents}), parquet)
    return {"csv": csv, "parquet": parquet}


def measure(n: int, workdir: pathlib.Path, repeats: int = 3) -> None:
    files = _write(workdir, n)
    env = large_import_env(n)
    tag = size_tag(n)
    walls: dict[str, list[float]] = {fmt: [] for fmt in files}
    peaks: dict[str, list[float]] = {fmt: [] for fmt in files}
    for attempt in range(repeats):
        for fmt, path in files.items():  # side by side, alternating
            db = workdir / f"import-{fmt}-{attempt}.db"
            out = subprocess.run([sys.executable, "-c", _IMPORT, str(path), str(db)], env=env,
                                 check=True, capture_output=True, text=True).stdout.split()
            walls[fmt].append(float(out[0]))
            peaks[fmt].append(int(out[1]) / 1024)  # kB
            for leftover in workdir.glob(f"import-{fmt}-{attempt}.db*"):
                leftover.unlink()
    for fmt in files:
        bench_line(f"import_{tag}_{fmt}_s", statistics.median(walls[fmt]), "s")
        bench_line(f"import_{tag}_{fmt}_peak_rss_mb", statistics.median(peaks[fmt]), "MB")


def main() -> None:
    n = int(os.environ.get("JURYBOX_BENCH_ITEMS", "1000000"))
    with tempfile.TemporaryDirectory(prefix="jurybox-import-") as tmp:
        measure(n, pathlib.Path(tmp))


if __name__ == "__main__":
    main()
