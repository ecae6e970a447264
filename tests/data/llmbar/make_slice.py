"""How this slice was made from LLMBar (kept for the record; the tests read the files it wrote).

Source: https://github.com/princeton-nlp/LLMBar (MIT licence, see LICENSE beside this file),
commit 900616b. For each of the five subsets (Natural, Adversarial/Neighbor, GPTInst, GPTOut,
Manual) it takes `Dataset/LLMBar/<subset>/dataset.json` (the items and their gold label) and,
for the five judges of the paper's main table (GPT-4, ChatGPT, LLaMA2, PaLM2, Falcon) with the
"Swap" strategy, `evaluators/<judge>/Swap/result.json`: the winner in each presentation order
of the last result (the one the authors' statistics.json counts, LLMEvaluator/evaluate.py),
already read back in the item's own order ("1": output_1 is better). Reasoning (the judge's
completion) is kept for the Natural subset only, to keep the slice small.

    python make_slice.py /path/to/LLMBar/checkout
"""

from __future__ import annotations

import csv
import json
import pathlib
import sys

SUBSETS = ["Natural", "Adversarial/Neighbor", "Adversarial/GPTInst", "Adversarial/GPTOut",
           "Adversarial/Manual"]
JUDGES = ["GPT-4", "ChatGPT", "LLaMA2", "PaLM2", "Falcon"]


def main(root: pathlib.Path) -> None:
    here = pathlib.Path(__file__).parent
    figures: dict[str, dict[str, object]] = {}
    with (here / "items.jsonl").open("w", encoding="utf-8") as items, \
            (here / "verdicts.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["item_id", "judge", "order", "winner", "reasoning"])
        for subset in SUBSETS:
            base = root / "Dataset" / "LLMBar" / subset
            tag = subset.replace("Adversarial/", "")
            dataset = json.loads((base / "dataset.json").read_text())
            for n, row in enumerate(dataset):
                items.write(json.dumps({"id": f"{tag}-{n:03d}", "subset": tag,
                                        "input": row["input"], "output_1": row["output_1"],
                                        "output_2": row["output_2"],
                                        "label": str(row["label"])}, ensure_ascii=False) + "\n")
            for judge in JUDGES:
                folder = base / "evaluators" / judge / "Swap"
                result = json.loads((folder / "result.json").read_text())
                figures[f"{tag}/{judge}"] = json.loads((folder / "statistics.json").read_text())
                for n, row in enumerate(result):
                    last = row["results"][-1]
                    for swap, order in (("False", "AB"), ("True", "BA")):
                        said = last[f"swap = {swap}"]
                        reasoning = said["completion"][0] if tag == "Natural" else ""
                        writer.writerow([f"{tag}-{n:03d}", judge, order, said["winner"] or "",
                                         reasoning])
    (here / "statistics.json").write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
