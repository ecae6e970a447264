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


# ------------------------------------------------------------------------------ raw workbooks

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"

Part = bytes | Callable[[Any], None]  # bytes, or a writer streaming into a zip member


def xlsx_bytes(
    sheet_data: Part,
    *,
    shared: Part | None = None,
    styles: bytes | None = None,
    date1904: bool = False,
    extra: dict[str, bytes] | None = None,
) -> bytes:
    """A minimal workbook written part by part, as Excel lays it out (an XML declaration on
    each part, shared strings, styles), so tests can put exactly the XML they mean in it.

    Args:
        sheet_data: the worksheet's <sheetData> children (bytes), or a function that writes the
            whole worksheet XML into the open zip member (to stream a bomb without holding it).
        shared: the <sst> children (<si> elements), or a writer for the whole part.
        styles: the whole styles.xml.
        date1904: the workbook's 1904 date system flag.
        extra: more parts by path (replacing the generated ones of the same path).
    """
    import io
    import zipfile

    rels = [f'<Relationship Id="rId1" Type="{_REL}/worksheet" Target="worksheets/sheet1.xml"/>']
    if shared is not None:
        rels.append(f'<Relationship Id="rId2" Type="{_REL}/sharedStrings" '
                    'Target="sharedStrings.xml"/>')
    if styles is not None:
        rels.append(f'<Relationship Id="rId3" Type="{_REL}/styles" Target="styles.xml"/>')
    parts: dict[str, Part] = {
        "[Content_Types].xml": b'<?xml version="1.0"?><Types xmlns="http://schemas.openxml'
                               b'formats.org/package/2006/content-types"/>',
        "_rels/.rels": (f'<Relationships xmlns="{_PKG}"><Relationship Id="rId1" '
                        f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/>'
                        "</Relationships>").encode(),
        "xl/workbook.xml": (f'<workbook xmlns="{_MAIN}" xmlns:r="{_REL}">'
                            f'<workbookPr date1904="{int(date1904)}"/><sheets>'
                            '<sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>'
                            ).encode(),
        "xl/_rels/workbook.xml.rels": (f'<Relationships xmlns="{_PKG}">{"".join(rels)}'
                                       "</Relationships>").encode(),
        "xl/worksheets/sheet1.xml": (
            sheet_data if callable(sheet_data)
            else f'<worksheet xmlns="{_MAIN}"><sheetData>'.encode() + sheet_data
            + b"</sheetData></worksheet>"
        ),
    }
    if shared is not None:
        parts["xl/sharedStrings.xml"] = (
            shared if callable(shared)
            else f'<sst xmlns="{_MAIN}">'.encode() + shared + b"</sst>"
        )
    if styles is not None:
        parts["xl/styles.xml"] = styles
    parts.update(extra or {})
    declaration = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n'  # as Excel
    parts = {path: declaration + part if isinstance(part, bytes) and part.startswith(b"<")
             and not part.startswith(b"<?") else part for path, part in parts.items()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path, content in parts.items():
            info = zipfile.ZipInfo(path)
            info.compress_type = zipfile.ZIP_DEFLATED
            if callable(content):
                with archive.open(info, "w", force_zip64=True) as member:
                    content(member)
            else:
                archive.writestr(info, content)
    return buffer.getvalue()


def sheet_rows(*rows: list[str]) -> bytes:
    """<row> elements from cells given as raw <c> XML strings, numbered from 1."""
    return b"".join(
        f'<row r="{n}">{"".join(cells)}</row>'.encode() for n, cells in enumerate(rows, start=1)
    )


def styles_xml(*num_fmt_ids: int, custom: dict[int, str] | None = None) -> bytes:
    """styles.xml whose cell style i uses number format `num_fmt_ids[i]` (14 is a date)."""
    fmts = "".join(f'<numFmt numFmtId="{k}" formatCode="{v}"/>' for k, v in (custom or {}).items())
    xfs = "".join(f'<xf numFmtId="{i}" fontId="0" fillId="0" borderId="0"/>' for i in num_fmt_ids)
    return (f'<styleSheet xmlns="{_MAIN}"><numFmts count="{len(custom or {})}">{fmts}</numFmts>'
            f'<cellXfs count="{len(num_fmt_ids)}">{xfs}</cellXfs></styleSheet>').encode()


LLMBAR = Path(__file__).parent / "data" / "llmbar"


@pytest.fixture(scope="session")
def llmbar_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """LLMBar's 419 pairs and its five judges' verdicts in both orders, imported as a run
    (`tests/data/llmbar/`): the database file and the run id."""
    from judging.panel.pairwise import PairwiseConfig
    from judging.runs.intake.verdict_import import ImportChoices, import_verdicts
    from storage.datasets.dataset_store import save_dataset
    from storage.datasets.imported import guess_long, verdicts_from_long
    from storage.datasets.importing import read_dataset
    from storage.db import open_db

    db_path = tmp_path_factory.mktemp("llmbar") / "j.db"
    db = open_db(db_path)
    try:
        items = read_dataset(LLMBAR / "items.jsonl", id_column="id", gold_column="label")
        dataset_id = save_dataset(db, items, name="LLMBar").id
    finally:
        db.close()
    rows = read_dataset(LLMBAR / "verdicts.csv")
    vset = verdicts_from_long(rows.items, guess_long(rows.columns), numeric=False,
                              source="LLMBar verdicts.csv")
    made = import_verdicts(db_path, vset, ImportChoices(
        name="LLMBar judges", pairwise=PairwiseConfig(
            first_field="output_1", second_field="output_2", a_label="1", b_label="2",
            tie_label=None, inconsistent="flag")), dataset_id=dataset_id)
    assert made.status == "done"
    return db_path, made.run_id
