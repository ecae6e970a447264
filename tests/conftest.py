"""Shared fixtures. Each area keeps its fixtures in `tests/fixtures_<area>.py`; they are loaded
here as plugins so every test file can use them."""

import pathlib

pytest_plugins = sorted(
    f"tests.{path.stem}" for path in pathlib.Path(__file__).parent.glob("fixtures_*.py")
)
