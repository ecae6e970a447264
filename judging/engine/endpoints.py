"""Where a critic's requests go: its own base URL, its preset's, or the built-in simulator's.

Apart from `judging.panel.vendors` (the presets, pure data) because the simulated vendor's
address is known only once the process-wide simulator has started: this is the one place the
engine reaches the simulator, so reading a panel never loads it.
"""

from __future__ import annotations

from judging.errors import CriticCallError
from judging.panel.critics import Critic
from judging.panel.vendors import get_preset
from judging.simulator.sim_vendor import shared_simulator


def resolve_base_url(critic: Critic) -> str:
    """The base URL a critic's requests go to, without a trailing slash.

    The simulated vendor's URL comes from the shared in-process simulator (started on first use)
    unless the critic names one.

    Raises:
        CriticCallError: unknown vendor, or a custom vendor with no `base_url`.
    """
    preset = get_preset(critic.vendor)
    url = critic.base_url or preset.base_url
    if url is None and preset.simulated:
        url = shared_simulator().base_url  # started on first use, not on import
    if not url:
        raise CriticCallError(
            f"critic {critic.name!r}: vendor {critic.vendor!r} needs a base_url "
            "(e.g. http://127.0.0.1:8000/v1 for vLLM)"
        )
    return url.rstrip("/")
