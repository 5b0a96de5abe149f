"""Run the `idivm` command in a process of its own, as a user does, without paying its imports again.

A command-line run imports idivm, SQLAlchemy, psycopg and sqlglot before it does anything, most of a
short command's time (docs/benchmarks.md, "The test suite"). Here each run is a
process forked from a server (multiprocessing's forkserver, one per test process) that imported
them once: a fresh process all the same, with its own exit status, file descriptors, environment
and working directory, running `idivm.cli.main` as the `idivm` script does. What this does not
exercise (the interpreter starting and the script's entry point) `tests/test_readme.py` does, by
running the README's commands in a shell, and `test_cli.py`'s `--version` check.
"""
from __future__ import annotations

import locale
import multiprocessing
import os
import subprocess
import sys
import tempfile

_context = None


def _run_in_child(args: list[str], env: dict, cwd: str, out: str, err: str) -> None:
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    encoding = locale.getpreferredencoding(False)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)
    sys.stderr = open(2, "w", encoding=encoding, closefd=False)
    sys.argv = ["idivm", *args]
    from idivm.cli import main

    try:
        main()
    finally:  # the child ends with os._exit: nothing else flushes these
        sys.stdout.flush()
        sys.stderr.flush()


def run_cli(*args: str, env: dict | None = None, cwd: str | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess:
    """`idivm ARGS...` with this process's environment (and `env` over it); its exit status, stdout
    and stderr, as `subprocess.run(..., capture_output=True, text=True)` returns them."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        # what a command imports before its first statement (typer's pydantic, SQLAlchemy's dialect);
        # a module that fails to import here is imported by the child instead
        _context.set_forkserver_preload(["idivm.cli", "idivm.api", "sqlalchemy.dialects.postgresql.psycopg",
                                         "pydantic", "cli_runner"])
    with tempfile.TemporaryDirectory(prefix="idivm-cli-") as tmp:
        out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        for path in (out, err):
            open(path, "w").close()
        child = _context.Process(target=_run_in_child, args=(
            list(args), {**os.environ, **(env or {})}, cwd or os.getcwd(), out, err))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(["idivm", *args], timeout)
        encoding = locale.getpreferredencoding(False)
        with open(out, encoding=encoding) as f_out, open(err, encoding=encoding) as f_err:
            return subprocess.CompletedProcess(["idivm", *args], child.exitcode, f_out.read(), f_err.read())
