"""forge-reduce's fast path: test commands that are plain `forge-opt ARGS`, run in forks of a warm process.

A reduction runs its test command tens to hundreds of times. Each `forge-opt ... --verify-semantics`
run as a new program pays ~2-3 s of interpreter start-up and `import torch` for ~0.3 s of work on a
small candidate. When the test command is `forge-opt ARGS` and nothing else (no shell syntax, no
environment assignments, and the `forge-opt` on PATH is this environment's), `ForkedForgeOpt` starts
one server process (a fresh interpreter) that imports forge-opt's modules (torch included) and runs
nothing, and runs each candidate in a fresh `os.fork()` of it: the script's entry point on the same
`sys.argv`, its stdout and stderr captured at the file-descriptor level, its exit status the process's. So every
candidate still starts from a process in which no command has run: no state carries over from one
candidate to the next, and no torch thread pool exists yet to be broken by the fork.

Any other command runs through the shell, as `subprocess.run(cmd, shell=True)`.
`FORGE_REDUCE_SUBPROCESS=1` forces that path.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable

PROGRAM = "forge-opt"
PRELOAD = ("torch", "forge.cli.opt", "forge.driver.semantics", "forge.interpreter")
"""What the forkserver imports once: forge-opt itself and what `--verify-semantics` needs."""
_SPECIAL = set("|&;<>()$`\\*?[]#~{}\n")
"""Characters the shell would act on outside quotes (expansions, redirections, lists, globs)."""


def run_test(command: str) -> tuple[int, str]:
    """`command`'s exit status and its stdout + stderr, as the shell would run it."""
    proc = subprocess.run(command, shell=True, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


class ForkedForgeOpt:
    """Runs `forge-opt ARGS` commands in forks of a server process that has imported forge-opt.

    The server is a fresh interpreter (`serve`), not a fork of the caller: it has imported `PRELOAD`
    and run nothing else, whatever the caller did before (a torch thread pool does not survive a fork).
    """

    def __init__(self) -> None:
        self._scratch = tempfile.mkdtemp(prefix="forge-reduce-out-")
        self._server = subprocess.Popen(
            [sys.executable, "-c", "from forge.cli.forked_runs import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    @staticmethod
    def argv(command: str) -> list[str] | None:
        """`command`'s arguments after `forge-opt` when it can take the fast path, else None."""
        if os.environ.get("FORGE_REDUCE_SUBPROCESS") == "1" or not hasattr(os, "fork"):
            return None
        if not _plain(command):
            return None
        words = shlex.split(command)
        if not words or words[0] != PROGRAM:
            return None
        return words[1:] if _ours(shutil.which(PROGRAM)) else None

    def run(self, args: list[str]) -> tuple[int, str]:
        """`forge-opt args` in a fresh fork of the server: its exit status and its stdout + stderr."""
        log = os.path.join(self._scratch, "output.txt")
        assert self._server.stdin is not None and self._server.stdout is not None
        self._server.stdin.write(json.dumps({"args": args, "log": log, "cwd": os.getcwd()}) + "\n")
        self._server.stdin.flush()
        reply = self._server.stdout.readline()
        if not reply:
            raise RuntimeError(f"forge-reduce: the forge-opt fork server exited ({self._server.wait()})")
        with open(log, errors="replace") as f:
            return json.loads(reply)["code"], f.read()

    def close(self) -> None:
        """End the server (it exits when its requests end) and release its pipes and scratch file."""
        for pipe in (self._server.stdin, self._server.stdout):
            if pipe is not None:
                pipe.close()
        self._server.wait()
        shutil.rmtree(self._scratch, ignore_errors=True)


def serve() -> None:
    """The server: import `PRELOAD`, then per request line fork a child that runs forge-opt, and
    answer with its exit status (negative: the signal that ended it, as `subprocess` reports it)."""
    for name in PRELOAD:
        importlib.import_module(name)
    program = _entry_point()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                _forge_opt(program, request["args"], request["log"], request["cwd"])
            finally:
                os._exit(70)  # only reached if the child's own exit failed
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)


def _plain(command: str) -> bool:
    """Whether the shell would only split `command` into words: no special character outside single
    quotes (inside double quotes `$`, backquote and backslash still act), and the quotes balance."""
    quote = ""
    for char in command:
        if quote == "'":
            quote = "" if char == "'" else quote
        elif quote == '"':
            if char in "$`\\":
                return False
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in _SPECIAL:
            return False
    return quote == ""


def _ours(path: str | None) -> bool:
    """Whether the `forge-opt` found on PATH is the one installed beside this interpreter."""
    if path is None:
        return False
    mine = os.path.join(os.path.dirname(sys.executable), PROGRAM)
    return os.path.exists(mine) and os.path.samefile(path, mine)


def _entry_point() -> Callable[[], int]:
    """What the installed `forge-opt` script calls (its console-scripts entry point)."""
    (script,) = importlib.metadata.entry_points(group="console_scripts", name=PROGRAM)
    return script.load()


def _forge_opt(program: Callable[[], int], args: list[str], log: str, cwd: str) -> None:
    """The forked child: `program()` as the forge-opt script runs it, output into `log`; never returns."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the server's requests are not the command's input
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.close(null)
    os.chdir(cwd)
    sys.argv = [os.path.join(os.path.dirname(sys.executable), PROGRAM), *args]
    code = 1
    try:
        code = program()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
