"""Every documented line runs: the fenced blocks of README.md and docs/*.md (issue 20).

Each document's fenced ``bash``/``sh``/``console`` and ``python`` blocks run in
order in a fresh copy of the repository (without ``.git``, ``out/`` and build
artefacts), one working directory per document, so a block may use what an
earlier block of the same document wrote:

- a shell block runs with ``bash -e`` (a ``console`` block: only its ``$ ``
  lines, with their ``\\`` continuations);
- the Python blocks of one document run in one interpreter (the current one),
  sharing their names as a reader's session would;
- ``anonlab`` is the command installed beside the current interpreter, run warm: a
  fork server (:mod:`warm_anonlab`, one per test process) imports the package and its
  libraries once and forks a process per line, which runs the console script's entry
  point on the line's arguments, directory, environment and streams; the Python
  interpreter of the blocks and the benchmark scripts' ``--help`` are forked from it
  too (``ANONLAB_DOCS_FRESH=1``: the installed script and fresh interpreters);
- a block that runs ``anonlab party`` holds a machine-wide file lock while it runs,
  since the example fusion config binds fixed ports (pytest-xdist runs documents
  side by side).

A block fails the test on a non-zero exit or an exception, and the failure
shows the block and its output. Three markers, an HTML comment on the line right
before the fence, change that (docs/design.md, "Documented lines"):

- ``<!-- fails -->``: the block is meant to fail and must (exit code not 0, or
  an exception);
- ``<!-- ci -->``: the block installs the package or runs this test suite, so
  running it here would replace the package under test or recurse; every line of
  it must be a line that ``.ci/run`` runs;
- ``<!-- benchmark -->``: the block reproduces a measurement (minutes to hours of
  CPU on a quiet machine, often against a commit of the git history), far beyond
  the suite's time; its ``python benchmarks/NAME.py`` commands are checked instead:
  the script exists and its ``--help`` offers every ``--flag`` the line uses.

Every fence names its language; a block that is not runnable by nature (a
TOML snippet, output shown) says ``text``, ``toml``, ``json`` (or another
language of :data:`SHOWN`) and is not run.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from warm_anonlab import write_clients

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = frozenset({"bash", "sh", "console"})
PYTHON = frozenset({"python"})
SHOWN = frozenset({"text", "toml", "json", "java", "html", "csv", "ini", "r"})
MARKERS = frozenset({"fails", "ci", "benchmark"})
BENCHMARK = re.compile(r"python (benchmarks/[\w-]+\.py)(.*)")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*([\w-]+)\s*-->\s*$")
SKIPPED_TREES = (
    "out",
    "build",
    "dist",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".venv",
    "certs",
)
BLOCK_TIMEOUT = 600
# a block that runs `anonlab party` binds the fixed ports of examples/fusion/fusion.toml
PARTY_LOCK = Path(tempfile.gettempdir()) / "anonlab-docs-party.lock"


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts, its language, its text and its marker."""

    document: Path
    line: int
    language: str
    text: str
    marker: str | None

    @property
    def where(self) -> str:
        """``docs/x.md:12``: the fence's line, for messages."""
        inside = self.document.is_relative_to(REPO)
        shown = self.document.relative_to(REPO) if inside else self.document
        return f"{shown}:{self.line}"


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing the fence opened at ``start`` (CommonMark: same kind, as long)."""
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            return i
    raise AssertionError(f"{start + 1}: fence {fence} is never closed")


def _marker_before(lines: list[str], start: int) -> str | None:
    """The marker on the line right before the fence, if it is one of :data:`MARKERS`."""
    found = MARKER.match(lines[start - 1]) if start > 0 else None
    return found.group(1) if found and found.group(1) in MARKERS else None


def _dedent(body: list[str], indent: str) -> str:
    """The block's text without the fence's indentation (a block inside a list item)."""
    return (
        "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in body) + "\n"
    )


def extract_blocks(document: Path) -> list[Block]:
    """Every fenced block of ``document``, in order."""
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        end = _fence_end(lines, i, opened.group(2))
        blocks.append(
            Block(
                document,
                i + 1,
                opened.group(3).lower(),
                _dedent(lines[i + 1 : end], opened.group(1)),
                _marker_before(lines, i),
            )
        )
        i = end + 1
    return blocks


def console_commands(text: str) -> str:
    """The commands of a ``console`` block: ``$ `` lines and their ``\\`` continuations."""
    commands: list[str] = []
    continued = False
    for line in text.splitlines():
        if line.startswith("$ ") or continued:
            commands.append(line[2:] if line.startswith("$ ") and not continued else line)
            continued = line.rstrip().endswith("\\")
    return "\n".join(commands) + "\n"


def copy_repository(target: Path) -> Path:
    """A fresh copy of the working tree in ``target``, without git and build artefacts."""
    shutil.copytree(REPO, target, ignore=shutil.ignore_patterns(".git", *SKIPPED_TREES))
    return target


def block_environment(warm: Path | None = None) -> dict[str, str]:
    """The environment of a block: ``anonlab`` beside this interpreter first on PATH, or
    before it the warm ``anonlab`` of ``warm`` (a folder, see :mod:`warm_anonlab`)."""
    env = dict(os.environ)
    first = [str(warm)] if warm is not None else []
    env["PATH"] = os.pathsep.join([*first, str(Path(sys.executable).parent), env.get("PATH", "")])
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONWARNINGS", None)
    return env


@pytest.fixture(scope="session")
def warm_folder() -> Iterator[Path | None]:
    """A folder holding the warm ``anonlab`` (one fork server per test process), or None
    with ``ANONLAB_DOCS_FRESH=1``: then every line runs the installed script."""
    if os.environ.get("ANONLAB_DOCS_FRESH") == "1":
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="anonlab-warm-"))
    socket_path = folder / "s"
    server = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("warm_anonlab.py")),
            str(socket_path),
            str(Path(sys.executable).with_name("anonlab")),
        ],
        env=block_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        assert server.stdout.readline().strip() == "ready", "the warm anonlab did not start"
        yield write_clients(folder / "bin", sys.executable, socket_path)
    finally:
        server.stdin.close()
        server.wait(timeout=60)
        server.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


DRIVER = r"""
import os, sys, traceback
names = {"__name__": "__main__"}
channel = os.fdopen(os.dup(1), "w")
for request in sys.stdin:
    block, log = request.rstrip("\n").split("\t")
    sys.stdout.flush(); sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1); os.dup2(out, 2); os.close(out)
    status = "ok"
    try:
        with open(block, encoding="utf-8") as source:
            exec(compile(source.read(), block, "exec"), names)
    except SystemExit as stop:
        if stop.code not in (None, 0):
            traceback.print_exc(); status = "error"
    except BaseException:
        traceback.print_exc(); status = "error"
    sys.stdout.flush(); sys.stderr.flush()
    os.dup2(saved[0], 1); os.dup2(saved[1], 2); os.close(saved[0]); os.close(saved[1])
    channel.write(status + "\n"); channel.flush()
"""


class Session:
    """One document's run: its working copy, its Python interpreter, its block files."""

    def __init__(self, work: Path, scratch: Path, warm: Path | None = None) -> None:
        self.work = work
        self.scratch = scratch
        self.env = block_environment(warm)
        # the documents' Python blocks and the benchmark scripts' --help: warm too
        self.python = str(warm / "warm-python") if warm is not None else sys.executable
        self._python: subprocess.Popen[str] | None = None
        self._count = 0

    def _files(self, suffix: str) -> tuple[Path, Path]:
        self._count += 1
        return (
            self.scratch / f"block{self._count}{suffix}",
            self.scratch / f"block{self._count}.log",
        )

    def run_shell(self, text: str) -> tuple[bool, str]:
        """Run ``text`` with ``bash -e``: (exit code 0, combined output)."""
        script, _ = self._files(".sh")
        script.write_text(text, encoding="utf-8")
        done = subprocess.run(
            ["bash", "-e", str(script)],
            cwd=self.work,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BLOCK_TIMEOUT,
            check=False,
        )
        return done.returncode == 0, done.stdout

    def run_python(self, text: str) -> tuple[bool, str]:
        """Run ``text`` in the document's interpreter: (no exception, output)."""
        source, log = self._files(".py")
        source.write_text(text, encoding="utf-8")
        python = self._interpreter()
        assert python.stdin is not None and python.stdout is not None
        python.stdin.write(f"{source}\t{log}\n")
        python.stdin.flush()
        status = python.stdout.readline().strip()
        output = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if not status:
            return False, output + "\n(the interpreter died)"
        return status == "ok", output

    def _interpreter(self) -> subprocess.Popen[str]:
        if self._python is None:
            self._python = subprocess.Popen(
                [self.python, "-c", DRIVER],
                cwd=self.work,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        return self._python

    def close(self) -> None:
        """End the document's interpreter."""
        if self._python is not None:
            assert self._python.stdin is not None and self._python.stdout is not None
            self._python.stdin.close()
            self._python.wait(timeout=60)
            self._python.stdout.close()


def ci_lines() -> set[str]:
    """The stripped lines of ``.ci/run``."""
    return {line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()}


def check_ci_block(block: Block) -> str | None:
    """A ``<!-- ci -->`` block: the lines ``.ci/run`` does not run, as a message, or None."""
    missing = [
        line for line in block.text.splitlines() if line.strip() and line.strip() not in ci_lines()
    ]
    return f"{block.where}: .ci/run does not run {missing}" if missing else None


def check_benchmark_block(
    block: Block, work: Path, env: dict[str, str], python: str = sys.executable
) -> str | None:
    """A ``<!-- benchmark -->`` block: each script exists and offers the flags it is given."""
    problems: list[str] = []
    for script, arguments in BENCHMARK.findall(block.text):
        flags = re.findall(r"(?<!\S)(--[\w-]+)", arguments.split("#")[0])
        shown = subprocess.run(
            [python, script, "--help"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if shown.returncode != 0:
            problems.append(f"{script} --help: exit {shown.returncode}\n{shown.stderr[-2000:]}")
        problems += [f"{script} has no {flag}" for flag in flags if flag not in shown.stdout]
    if not BENCHMARK.search(block.text):
        problems.append("a benchmark block names no `python benchmarks/NAME.py` command")
    return f"{block.where}: " + "; ".join(problems) if problems else None


@contextmanager
def ports_of(block: Block) -> Iterator[None]:
    """Hold a machine-wide lock while a block runs parties: they bind fixed ports."""
    if "anonlab party" not in block.text:
        yield
        return
    with PARTY_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_block(session: Session, block: Block) -> str | None:
    """Run one block: None if it behaved as marked, else a message with block and output."""
    if block.marker == "ci":
        return check_ci_block(block)
    if block.marker == "benchmark":
        return check_benchmark_block(block, session.work, session.env, session.python)
    with ports_of(block):
        return judge(session, block)


def judge(session: Session, block: Block) -> str | None:
    """Run a runnable block and compare the outcome with its marker."""
    if block.language in PYTHON:
        ok, output = session.run_python(block.text)
    else:
        text = console_commands(block.text) if block.language == "console" else block.text
        ok, output = session.run_shell(text)
    if ok == (block.marker == "fails"):
        expected = "fail" if block.marker == "fails" else "run"
        return (
            f"{block.where}: the {block.language} block did not {expected} as documented\n"
            f"--- block ---\n{block.text}--- output ---\n{output[-6000:]}"
        )
    return None


def runnable(blocks: list[Block]) -> Iterator[Block]:
    """The blocks that run (or are checked against .ci/run), in order."""
    return (b for b in blocks if b.language in SHELL | PYTHON)


def documents_with_blocks() -> list[Path]:
    """The documents with at least one shell or Python block."""
    return [d for d in DOCUMENTS if any(runnable(extract_blocks(d)))]


@pytest.mark.parametrize(
    "document", documents_with_blocks(), ids=lambda p: str(p.relative_to(REPO))
)
def test_every_block_of_the_document_runs(
    document: Path, tmp_path: Path, warm_folder: Path | None
) -> None:
    """The runnable blocks of ``document`` run in order in a fresh copy; the first failure shows."""
    blocks = list(runnable(extract_blocks(document)))
    work = copy_repository(tmp_path / "repo")
    scratch = tmp_path / "blocks"
    scratch.mkdir()
    session = Session(work, scratch, warm_folder)
    try:
        for block in blocks:
            failure = run_block(session, block)
            if failure is not None:
                pytest.fail(failure, pytrace=False)
    finally:
        session.close()


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_fence_names_a_known_language(document: Path) -> None:
    """No fence is left unlabelled or in a language the test neither runs nor knows as shown."""
    known = SHELL | PYTHON | SHOWN
    odd = [
        f"{b.where}: {b.language or 'no language'}"
        for b in extract_blocks(document)
        if b.language not in known
    ]
    assert not odd, f"label these fences (run: {sorted(SHELL | PYTHON)}, shown: {sorted(SHOWN)})"


def test_extraction_reads_markers_languages_and_indentation(tmp_path: Path) -> None:
    """The parser on a small document: markers, an indented fence, a longer fence, console."""
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n<!-- fails -->\n```bash\nfalse\n```\n\n  ```python\n  x = 1\n"
        "  ```\n````text\n```bash\n````\n<!-- ci -->\n```console\n$ echo a \\\n"
        "  b\na b\n```\n",
        encoding="utf-8",
    )
    blocks = extract_blocks(doc)
    assert [(b.language, b.marker) for b in blocks] == [
        ("bash", "fails"),
        ("python", None),
        ("text", None),
        ("console", "ci"),
    ]
    assert blocks[1].text == "x = 1\n"
    assert blocks[2].text == "```bash\n"
    assert console_commands(blocks[3].text) == "echo a \\\n  b\n"


def test_runner_sees_failures_exceptions_and_shared_names(tmp_path: Path) -> None:
    """A failing shell line, an exception and a marked failure are judged as documented."""
    (tmp_path / "w").mkdir()
    (tmp_path / "s").mkdir()
    session = Session(tmp_path / "w", tmp_path / "s")
    doc = tmp_path / "d.md"

    def block(language: str, text: str, marker: str | None = None) -> Block:
        return Block(doc, 1, language, text, marker)

    try:
        assert run_block(session, block("bash", "echo hi > f.txt\n")) is None
        assert run_block(session, block("python", "x = open('f.txt').read()\n")) is None
        assert run_block(session, block("python", "assert x == 'hi\\n'\n")) is None
        failed = run_block(session, block("python", "print('seen'); 1 / 0\n"))
        assert failed is not None and "ZeroDivisionError" in failed and "seen" in failed
        assert run_block(session, block("bash", "false\necho no\n")) is not None
        assert run_block(session, block("bash", "false\n", "fails")) is None
        assert run_block(session, block("python", "pass\n", "fails")) is not None
        assert run_block(session, block("sh", "anonlab --help > /dev/null\n")) is None
    finally:
        session.close()


def test_benchmark_and_ci_blocks_are_checked_not_run(tmp_path: Path) -> None:
    """A benchmark block's flags must exist; a ci block's lines must be lines of .ci/run."""
    doc = tmp_path / "d.md"
    env = block_environment()

    def block(text: str, marker: str) -> Block:
        return Block(doc, 1, "bash", text, marker)

    assert (
        check_benchmark_block(
            block("python benchmarks/risk.py --repeats 3\n", "benchmark"), REPO, env
        )
        is None
    )
    wrong = check_benchmark_block(
        block("python benchmarks/risk.py --no-such-flag\n", "benchmark"), REPO, env
    )
    assert wrong is not None and "has no --no-such-flag" in wrong
    assert check_benchmark_block(block("sleep 1\n", "benchmark"), REPO, env) is not None
    ci_line = next(line for line in ci_lines() if "pytest" in line)
    assert check_ci_block(block(ci_line + "\n", "ci")) is None
    assert check_ci_block(block("python -m pip install nothing-else\n", "ci")) is not None


def test_the_warm_anonlab_answers_as_the_installed_one(
    tmp_path: Path, warm_folder: Path | None
) -> None:
    """Output, exit status, working directory, stdin and files of a few lines: the same
    through the fork server as with the installed script and a fresh interpreter."""
    lines = [
        "anonlab --version",
        "anonlab generalize --nope",
        "anonlab verify missing.json",
        "cd examples && anonlab hierarchy redaction census/wage.csv --column zip "
        "--output ../out/h.csv && cat ../out/h.csv | head -3",
        "anonlab hierarchy redaction - --column zip --output out/h.csv < /dev/null",
        "warm-python -c 'import sys; print(sys.argv, input()); sys.exit(3)' a <<< hi",
        "warm-python -c 'import os; print(os.getcwd()); 1 / 0'",
    ]
    seen = {}
    for name, warm in (("fresh", None), ("warm", warm_folder)):
        work = tmp_path / name
        (work / "examples" / "census").mkdir(parents=True)
        shutil.copy(REPO / "examples" / "census" / "wage.csv", work / "examples" / "census")
        (work / "out").mkdir()
        session = Session(work, tmp_path / f"{name}_blocks", warm)
        session.scratch.mkdir()
        if warm is None:  # a fresh interpreter for warm-python's lines
            session.env["PATH"] = f"{_fresh_python(tmp_path)}{os.pathsep}{session.env['PATH']}"
        seen[name] = [
            subprocess.run(
                ["bash", "-c", line],
                cwd=work,
                env=session.env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            for line in lines
        ]

    def same(text: str) -> str:  # the two working folders differ in name alone
        return text.replace(str(tmp_path / "warm"), str(tmp_path / "fresh"))

    for line, cold_run, warm_run in zip(lines, seen["fresh"], seen["warm"], strict=True):
        assert (warm_run.returncode, same(warm_run.stdout)) == (
            cold_run.returncode,
            cold_run.stdout,
        ), line
        assert same(warm_run.stderr) == cold_run.stderr, line
    codes = [done.returncode for done in seen["warm"]]
    assert codes == [0, 2, 2, 0, 2, 3, 1]
    assert seen["warm"][6].stdout.strip() == str(tmp_path / "warm")


def _fresh_python(tmp_path: Path) -> Path:
    """A folder whose ``warm-python`` is the current interpreter itself."""
    folder = tmp_path / "fresh_bin"
    folder.mkdir()
    (folder / "warm-python").symlink_to(sys.executable)
    return folder
