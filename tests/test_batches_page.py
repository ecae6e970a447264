"""The Run page of a run whose critics went to a vendor's batch API (issue 13 part 3): it says
"submitted to vendor", lists the batches, and its button collects the results."""

from __future__ import annotations

import pathlib

from judging.runs.background.jobs import JobRegistry, prepare_run
from judging.simulator.sim_server import SimulatorServer
from storage.datasets.dataset_store import save_dataset
from storage.db import open_db
from storage.results.runs import get_run
from storage.results.vendor_batches import run_batches
from tests.fixtures_storage import make_parsed
from tests.test_app_smoke import all_text, no_exception, open_page
from tests.test_batches import MIXED, _panel


def test_the_run_page_shows_a_run_waiting_for_its_vendor_and_collects_it(
        app_db: pathlib.Path) -> None:
    from pages.ui.state import registry

    with SimulatorServer(latency_ms=1, batch_seconds=0.2) as sim:
        db = open_db(app_db)
        dataset_id = save_dataset(db, make_parsed(12)).id
        run_id = prepare_run(db, dataset_id=dataset_id, panel=_panel(sim.base_url, *MIXED))
        # Submitted and left, as `jurybox judge --no-wait` does in another process.
        job = JobRegistry().start_run(str(app_db), run_id, detach=True)
        assert job.wait(30) and job.progress().status == "interrupted"

        at = open_page("run", query={"run": str(run_id)})
        no_exception(at)
        text = all_text(at)
        assert f"Run #{run_id} · submitted to vendor" in text
        assert "Submitted to the vendor: batch_" in text
        (batches,) = [frame.value for frame in at.dataframe if "batch" in frame.value.columns]
        assert list(batches["critic"]) == ["opus", "haiku"]
        assert list(batches["API"]) == ["openai", "anthropic"]
        assert set(batches["state"]) == {"submitted"} and list(batches["requests"]) == [12, 12]
        button = at.button(key="resume_run")
        assert button.label == "Collect the vendor's results"

        button.click().run()
        no_exception(at)
        collecting = registry().get(run_id)
        assert collecting is not None and collecting.kind == "resume" and collecting.wait(60)
        run = get_run(db, run_id)
        assert run["status"] == "done" and run["ok_calls"] == 36
        assert [b["state"] for b in run_batches(db, run_id)] == ["collected", "collected"]
        at.run()
        no_exception(at)
        assert f"Run #{run_id} · done" in all_text(at)
