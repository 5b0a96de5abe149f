"""The README's "Using it" commands run as written (issue 18 item 7): the block after
<!-- usage-commands --> is run by bash, stopping at the first failing command, against a fresh
database. Two lines are what a reader adapts: the venv to activate (here: the Python running the
tests) and the database (here: the test's)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import psycopg

README = Path(__file__).resolve().parents[1] / "README.md"


def usage_commands() -> str:
    text = README.read_text()
    block = re.search(r"<!-- usage-commands -->\n```sh\n(.*?)\n```", text, re.S)
    assert block, "README.md has no usage-commands block"
    return block.group(1)


@pytest.mark.slow
def test_the_usage_commands_run_as_written(fresh_db, tmp_path):
    script = usage_commands()
    activate, export = ". .venv/bin/activate", "export IDIVM_DSN="
    assert activate in script and export in script
    lines = []
    for line in script.splitlines():
        if line.startswith(activate):
            line = f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:\"$PATH\""
        elif line.startswith(export):
            line = f"export IDIVM_DSN={shlex.quote(fresh_db)}"
        lines.append(line)
    env = {k: v for k, v in os.environ.items() if k not in ("IDIVM_DSN", "DATABASE_URL")}
    run = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, f"stdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}"
    assert "Traceback" not in run.stderr
    assert "public.phone_parts: OK, equal to its query" in run.stdout
    assert "created public.dear_parts" in run.stdout
    with psycopg.connect(fresh_db) as db:
        assert db.execute("SELECT count(*) FROM dear_parts").fetchone()[0] == 1  # P2 at 20
        assert db.execute("SELECT to_regclass('phone_parts')").fetchone()[0] is None  # dropped at the end


def test_docker_compose_keeps_data_in_a_volume_and_builds_outside_the_checkout():
    compose = (README.parent / "docker-compose.yml").read_text()
    postgres = compose.split("  postgres:\n", 1)[1].split("\n\n", 1)[0]
    assert "- pgdata:/var/lib/postgresql/data" in postgres
    assert "  pgdata:" in compose.split("\nvolumes:\n", 1)[1].splitlines()
    mounts = re.findall(r"- \.:/src(\S*)", compose)
    assert mounts and all(m == ":ro" for m in mounts)  # the checkout is read-only inside containers
    assert "pip install -q /src" not in compose and "'/src[spark]'" not in compose
