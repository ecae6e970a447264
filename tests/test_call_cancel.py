"""Cancel that cancels: once a run is cancelled, no request reaches the vendor beyond those
already in flight, even from calls queued behind a vendor limit. Over real HTTP on 127.0.0.1."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest

from judging.engine.panel_runner import judge_many
from judging.panel.critics import Critic
from judging.panel.panel_model import Panel, VendorLimits
from judging.scales import Scale
from judging.verdicts import FailureKind, Item, PanelVerdict
from tests.fixtures_network import LocalVendor, Reply, SeenRequest

LIMIT = 2
CALLS = 14


@pytest.mark.timeout(60)
def test_calls_queued_behind_a_vendor_limit_are_not_sent_after_cancel(
    local_vendor: Callable[..., LocalVendor],
) -> None:
    release = threading.Event()
    lock = threading.Condition()
    in_flight = [0]

    def held(seen: SeenRequest) -> Reply:
        if seen.number == 1:
            return Reply()  # the critic's probe call: answered at once
        with lock:
            in_flight[0] += 1
            lock.notify_all()
        release.wait(timeout=30)
        return Reply()

    vendor = local_vendor(held)
    critic = Critic(name="c", vendor="custom", model="m", prompt_template="Judge {text}",
                    base_url=vendor.base_url)
    panel = Panel(scale=Scale(kind="nominal", labels=["KEEP", "REJECT"]), critics=[critic],
                  limits={"custom": VendorLimits(max_concurrency=LIMIT)})
    cancel = threading.Event()
    results: list[PanelVerdict] = []
    run = threading.Thread(target=lambda: results.extend(judge_many(panel,
        [Item(f"i{k}", {"text": f"x{k}"}) for k in range(CALLS)], concurrency=CALLS,
        cancel=cancel,
    )))
    run.start()
    # The probe is done and the limit is full: the other 11 calls wait for a slot.
    with lock:
        assert lock.wait_for(lambda: in_flight[0] == LIMIT, timeout=30)
    cancel.set()
    release.set()  # the in-flight replies arrive, freeing slots for the queued calls
    run.join(timeout=30)
    assert not run.is_alive()

    sent_after_probe = len(vendor.seen) - 1
    assert sent_after_probe <= LIMIT  # only what was in flight at the cancel (was 6 of 14)
    kinds = Counter(v.failure for r in results for v in r.verdicts)
    assert kinds == {None: 1 + sent_after_probe,
                     FailureKind.CANCELLED: CALLS - 1 - sent_after_probe}
