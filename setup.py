"""Which files the wheel holds; everything else about the package is in pyproject.toml.

Why a setup.py: the wheel ships the web app as well as the library, so that `pip install
jurybox` then `jurybox app` works outside a checkout. The app stays where the project's layout
names it (app.py, pages/, static/ and .streamlit/config.toml at the top of the checkout:
`make run` and the tests run `streamlit run app.py` there, and Streamlit's multipage app needs
`pages/` beside its main script). The wheel installs those files together as the folder
`jurybox_app/` (a package mapped from the checkout's top, not a copy kept in the tree), so no
generic top-level `app` or `pages` lands in site-packages. pyproject's `packages.find` cannot
map a package onto the project root, hence these few lines.
"""

from __future__ import annotations

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

# The app's installed name; `judging.runs.commands.cli_app` looks for it beside `judging`.
APP_PACKAGE = "jurybox_app"


class BuildPy(build_py):
    """Of the checkout's top-level modules only app.py is the app (not this file, nor a
    developer's scratch script beside it)."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        modules: list[tuple[str, str, str]] = super().find_package_modules(package, package_dir)
        if package == APP_PACKAGE:
            return [entry for entry in modules if entry[1] == "app"]
        return modules


setup(
    cmdclass={"build_py": BuildPy},
    packages=[
        *find_namespace_packages(include=["judging", "judging.*", "storage", "storage.*"],
                                 exclude=["*.__pycache__"]),
        APP_PACKAGE,
        f"{APP_PACKAGE}.pages",
        f"{APP_PACKAGE}.pages.ui",
        # The page helpers, grouped by page.
        *(f"{APP_PACKAGE}.pages.ui.{group}" for group in ("agreement", "panel", "review", "run")),
    ],
    package_dir={APP_PACKAGE: "."},
    # Only what is named here: the top folder also holds README.md, pyproject.toml and, on a
    # developer's machine, .streamlit/secrets.toml and jurybox.db, none of which belong in a wheel.
    include_package_data=False,
    package_data={
        "judging": ["demo/*.yaml", "demo/*.csv", "demo/*.jsonl"],
        APP_PACKAGE: [".streamlit/config.toml", "static/*.png"],
    },
)
