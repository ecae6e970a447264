"""`jurybox app [--port N] [--db PATH] [--host ADDRESS]`: start the web app.

The app is the Streamlit script `app.py` with `pages/` beside it: in a checkout at its top, in
an installed wheel the folder `jurybox_app/` next to the `judging` package (setup.py maps one
onto the other). The command becomes `streamlit run` on that script (the process is replaced,
so Ctrl-C and a parent's SIGTERM reach Streamlit directly), with the options `make run` passes:
headless, no usage statistics, 127.0.0.1 unless `--host` says otherwise. The rest of
Streamlit's settings come from the `.streamlit/config.toml` beside the script, which Streamlit
reads wherever it is started from.
"""

from __future__ import annotations

import argparse
import errno
import os
import pathlib
import socket
import sys

import judging
from judging.errors import ConfigError
from storage.db import DB_ENV_VAR, default_db_path
from storage.faults import check_folder

APP_PACKAGE = "jurybox_app"  # setup.py installs app.py, pages/, static/ under this name
DEFAULT_PORT = 8501  # Streamlit's own default, and `make run`'s


def add_app(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "app",
        help="start the web app on http://127.0.0.1:8501 until Ctrl-C",
        description="Start the Jurybox web app (Streamlit, headless, no usage statistics) on "
        "127.0.0.1, over the same database as the other commands. Stop it with Ctrl-C.",
    )
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"port to serve on (default {DEFAULT_PORT})")
    p.add_argument("--db", type=pathlib.Path, default=None,
                   help="SQLite database the app opens (default: $JURYBOX_DB, else ./jurybox.db)")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1: this machine only; anyone "
                   "who can reach the app can start runs with its keys, so configure sign-in "
                   "before you pass another)")
    p.set_defaults(func=cmd_app)


def _port(text: str) -> int:
    """A TCP port number for argparse (1-65535)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1-65535)")
    return port


def app_script() -> pathlib.Path:
    """The app's main script: the installed `jurybox_app/app.py`, else a checkout's app.py.

    Raises:
        ConfigError: neither is there (an install without the app).
    """
    top = pathlib.Path(judging.__file__).resolve().parent.parent
    for script in (top / APP_PACKAGE / "app.py", top / "app.py"):
        if script.is_file():
            return script
    raise ConfigError(f"the web app is not installed beside the judging package ({top}); "
                      "reinstall Jurybox with `pip install jurybox`")


def streamlit_argv(script: pathlib.Path, *, host: str, port: int) -> list[str]:
    """The `streamlit run` command line that serves the app, as `make run` does."""
    return [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.address", host, "--server.port", str(port),
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
        # Nothing to reload in an installed app; watching site-packages would only cost CPU.
        "--server.fileWatcherType", "none",
    ]


def app_environment(db: pathlib.Path | None) -> dict[str, str]:
    """The app's environment: this one, with `$JURYBOX_DB` set to `db` (absolute) if given.

    Raises:
        DatabaseFault: the database's folder does not exist (the app would only say so later,
            in the browser).
    """
    env = dict(os.environ)
    if db is not None:
        env[DB_ENV_VAR] = str(db.expanduser().resolve())
    check_folder(env.get(DB_ENV_VAR) or default_db_path())
    return env


def check_port_free(host: str, port: int) -> None:
    """Refuse a port another program listens on, before Streamlit starts and fails on it.

    Raises:
        ConfigError: the address cannot be listened on (in use, or not this machine's).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} is not an address of this machine ({exc.strerror}); "
                          "give an address such as 127.0.0.1") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As Streamlit's server binds: a port left in TIME_WAIT by a server just stopped is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is in use (another app is serving "
                                  "there); choose another --port") from None
            raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); check "
                              "--host and --port") from None


def cmd_app(args: argparse.Namespace) -> int:
    """Check the script, the database folder and the port, then become `streamlit run`."""
    script = app_script()
    env = app_environment(args.db)
    check_port_free(args.host, args.port)
    argv = streamlit_argv(script, host=args.host, port=args.port)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)  # does not return
