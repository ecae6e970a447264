"""What comparing two runs reads beyond their final labels: each item's panel decision, whether
every critic backed it, and the dataset's gold label.

The final label itself comes from `storage.reviewing.overrides.final_labels` (the one rule for it); this
module does not repeat it.
"""

from __future__ import annotations

import pandas as pd
import sqlite_utils


def panel_outcomes(db: sqlite_utils.Database, run_id: int) -> pd.DataFrame:
    """Every decided item of a run, in item order.

    Returns:
        A DataFrame with columns item_id, consensus (the panel's label, None when it abstained),
        backed (bool: every critic answered and gave the consensus, the opposite of the
        disagreement flag) and gold (the dataset's gold label, None where it has none).
    """
    frame = pd.read_sql_query(
        """
        SELECT c.item_id, c.consensus, NOT c.disagreement AS backed, i.gold
        FROM consensus c
        JOIN runs r ON r.id = c.run_id
        LEFT JOIN items i ON i.dataset_id = r.dataset_id AND i.item_id = c.item_id
        WHERE c.run_id = :run
        ORDER BY c.position, c.item_id
        """,
        db.conn,
        params={"run": run_id},
    )
    frame["backed"] = frame["backed"].astype(bool)
    return frame
