"""Keep Streamlit's collection after each script run cheap.

Streamlit runs `gc.collect(2)` after every script run (`runner.postScriptGC`, on by default, so
memory held in reference cycles is given back between runs). A full collection walks every
object the process tracks, and almost all of them live as long as the server: the modules of
Streamlit, pandas, pyarrow, altair, numpy and ours, about 130,000 objects once Review is open.
Walking them cost ~85 ms of CPU per run here, 40% of a Review save at 100,000 items (measured
with `python -m benchmarks review_save` and the server's CPU time per save: 0.20 s -> 0.12 s).

So once a page has run and the modules it imported are loaded, the surviving objects are
moved to the permanent generation (`gc.freeze()`, made for this: "ignore them in all future
collections"). Later post-run collections walk only what runs create, and still reclaim it.
It happens again only when a run has loaded new modules (the first visit of another page),
a handful of times per process; each time pays one full collection first, so nothing that was
already garbage is frozen.
"""

from __future__ import annotations

import gc
import sys
import threading

import streamlit as st
from streamlit import runtime

_lock = threading.Lock()
_modules_at_freeze = 0


def freeze_loaded_modules() -> None:
    """After a page's run: if modules were loaded since the last freeze, collect once and move
    every surviving object to the permanent generation. Otherwise nothing (a length check).
    Only in a server that collects after each run (AppTest does not: nothing to make cheap)."""
    global _modules_at_freeze
    if len(sys.modules) == _modules_at_freeze or not post_run_collection():
        return
    with _lock:  # sessions run in threads of their own: one freeze at a time
        if len(sys.modules) == _modules_at_freeze:
            return
        gc.collect()
        gc.freeze()
        _modules_at_freeze = len(sys.modules)


def post_run_collection() -> bool:
    """Whether this process is a Streamlit server that collects after every script run."""
    return runtime.exists() and bool(st.get_option("runner.postScriptGC"))
