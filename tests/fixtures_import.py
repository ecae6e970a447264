"""Fixtures for dataset import: write the same rows as any supported file format."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WriteDataset = Callable[..., Path]


def write_dataset_file(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write `rows` to `path` in the format its extension names (csv, tsv, jsonl, json,
    parquet, xlsx). Columns are the keys of the first row."""
    columns = list(rows[0]) if rows else []
    fmt = path.suffix.lower().lstrip(".")
    if fmt in ("csv", "tsv"):
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, delimiter="," if fmt == "csv" else "\t")
            writer.writerow(columns)
            writer.writerows([[row.get(c) for c in columns] for row in rows])
    elif fmt in ("jsonl", "ndjson"):
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(rows), encoding="utf-8")
    elif fmt == "parquet":
        import pandas as pd

        pd.DataFrame(rows, columns=columns).to_parquet(path, index=False)
    elif fmt == "xlsx":
        import openpyxl

        workbook = openpyxl.Workbook()
        sheet = workbook.active
        sheet.append(columns)
        for row in rows:
            sheet.append([row.get(c) for c in columns])
        workbook.save(path)
    else:
        raise ValueError(f"write_dataset_file cannot write {path.suffix!r}")
    return path


@pytest.fixture
def write_dataset(tmp_path: Path) -> WriteDataset:
    """`write_dataset(rows, name="items.csv") -> Path`: a dataset file in tmp_path."""

    def write(rows: list[dict[str, Any]], name: str = "items.csv") -> Path:
        return write_dataset_file(tmp_path / name, rows)

    return write
