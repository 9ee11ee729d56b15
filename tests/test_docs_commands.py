"""Every command written in README.md and docs/ works as written (issue 32).

The commands are collected from the pages themselves: the lines of ``bash``/``sh`` blocks, the
``$ ``-prompted and concrete ``jaxbandits`` / ``python`` lines of plain blocks, and the inline code
spans that are whole commands (no placeholder such as ``NAME``, ``[--opt]`` or ``...``). Each is
checked at the cost its kind allows in the default suite:

* ``jaxbandits ...``: the command line is parsed by the CLI's own parser exactly as written and
  the experiment (registered name, or a file the page writes first) resolves; the getting-started
  sequence of docs/index.md (quickstart, then the ``--set`` re-run) is *run*, with a tiny
  ``--runs``/``--horizon`` appended, in one folder, so a re-run that meets the first one's results
  fails here as it did for users; the heavy runs (reproductions, fits) are run in
  ``test_documented_heavy_commands_run`` (slow);
* ``python FILE ...``: the file exists and every ``--option`` it is given is one it declares;
* ``pip install ... '.[EXTRA]'``: the extra exists in pyproject.toml; ``mkdocs serve|build``: the
  ``docs`` extra provides every plugin mkdocs.yml uses (the build itself is tests/test_docs_build.py);
* ``curl`` exchanges of docs/online.md: replayed against the app in process, each response compared
  with the one the page shows (``test_documented_curl_exchanges``).

A command that fits none of these fails the test: a new documented command gets a check.
"""
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]+\b|\[|\.\.\.|\||\bI/N\b")
COMMAND = re.compile(r"(\.venv/bin/)?(jaxbandits|python3?|pip|mkdocs|curl|srun|pytest) ")

#: Inline spans that are fragments of a command named in the sentence around them, not commands.
FRAGMENTS = {
    "jaxbandits fit --chains 2 --warmup 300 --samples 300",  # docs/bayes.md: options of a fit
    "jaxbandits run --seed",  # docs/conventions.md: the option
    "jaxbandits: interrupted",  # docs/results.md: a message
    "pytest-xdist",  # README: a package
    'python -c "import jaxbandits"',  # docs/cli.md: what an import time was measured on
    "python -X importtime",  # docs/cli.md: the same
    "jaxbandits run my-experiment",  # docs/cli.md: an experiment the reader's own package registers
    "jaxbandits run: error: argument --runs: invalid int value: 'x'",  # docs/results.md: an error shown
}

#: Files that a page shows (a ``toml`` block) and then runs by name: the page's first toml block.
PAGE_FILES = {"my-conversions.toml": "docs/experiment-files.md", "my-experiment.toml": "docs/experiment-files.md"}

#: Files a page's own example writes before its commands read them: docs/online.md's banners.toml,
#: docs/ope.md's worked example's served.db (a serving database; tests/test_ope.py runs `evaluate`
#: on one).
PAGE_WRITES = ("banners.toml", "served.db")

#: The values a documented script gives its shell variables (docs/cluster.md's SLURM array, loop).
SHELL_VALUES = {"$SLURM_ARRAY_TASK_ID/$N": "1/16", "$OUT": "parts/fig1-1", "$RESUME": "--resume", "$i/3": "1/3",
                "$i": "1"}


def _pages():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def _strip_comment(line):
    out, q = [], None
    for i, ch in enumerate(line):
        if q:
            q = None if ch == q else q
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            break
        out.append(ch)
    return "".join(out).strip()


def documented_commands():
    """``[(page, command)]`` of every command written in README.md and docs/."""
    found = []
    for page in _pages():
        text = page.read_text()
        rel = str(page.relative_to(ROOT))
        for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S):
            if lang not in ("bash", "sh", "console", ""):
                continue
            body = re.sub(r"\\\n\s*", " ", body)  # a shell line continued with a backslash is one command
            for line in body.splitlines():
                s = line.strip()
                if not s or s.startswith("#"):
                    continue
                prompted = s.startswith("$ ")
                s = _strip_comment(s[2:] if prompted else s)
                if lang in ("bash", "sh") or (COMMAND.match(s) and (prompted or not PLACEHOLDER.search(s))):
                    found.append((rel, s))
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for span in re.findall(r"`([^`\n]+)`", prose):
            s = span.strip()
            if COMMAND.match(s) and not PLACEHOLDER.search(s):
                found.append((rel, s))
    return found


def _split(cmd):
    """One shell line -> its simple commands (``&&``, ``;``, a ``for`` loop's body), each without a
    ``> FILE`` redirection or a trailing ``&``, its shell variables given values (SHELL_VALUES)."""
    out = []
    if re.match(r"\w+=", cmd):  # a shell variable's assignment
        return out
    m = re.fullmatch(r"for \w+ in [^;]+; do (.*?) &? ?done(; wait)?", cmd)
    if m:
        cmd = m.group(1).rstrip(" &")
    for k in sorted(SHELL_VALUES, key=len, reverse=True):
        cmd = cmd.replace(k, SHELL_VALUES[k])
    for part in re.split(r"\s*(?:&&|;)\s*", cmd):
        if re.match(r"\w+=", part):  # a variable's assignment
            continue
        words = shlex.split(part)
        if ">" in words:
            words = words[: words.index(">")]
        if words:
            out.append(words)
    return out


def _extras():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _check_jaxbandits(words, written):
    from jaxbandits import experiments as X
    from jaxbandits.apps.cli import main, parser

    p = parser()
    if words in ([], ["--help"], ["--version"]):  # the commands / the help / the version
        try:
            assert main(words) == 0
        except SystemExit as e:
            assert e.code == 0
        return
    if len(words) == 1:  # `jaxbandits run` in a sentence: names the command
        assert words[0] in p._subparsers._group_actions[0].choices, f"no command {words[0]!r}"
        return
    a = p.parse_args(words)  # the options as written (a _UsageError names the bad one)
    name = getattr(a, "name", None)
    if a.cmd in ("run", "show") and name:
        if name.endswith(".toml"):
            if name in PAGE_FILES and name not in written:
                _check_page_file(name)
                written.add(name)
            assert name in written or (ROOT / name).is_file(), f"{name}: no page writes it before running it"
        else:
            X.get(name)  # a registered experiment
    for path in [getattr(a, "log", None)] + ([a.config] if a.cmd == "serve" and a.config else []):
        if path and path not in written:
            assert (ROOT / path).is_file() or path in PAGE_WRITES, f"{path}: no such file"


def _check_page_file(name):
    """The file a page shows, read as the page says to run it: its objects build."""
    import tempfile

    from jaxbandits.experiments import files as expfile

    text = (ROOT / PAGE_FILES[name]).read_text()
    block = re.search(r"```toml\n(.*?)```", text, re.S).group(1)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / name
        f.write_text(block)
        expfile.experiment(str(f))


def _check_python(words):
    if words[1] in ("-c", "-X"):
        raise AssertionError(f"no check for {' '.join(words)}")
    i = 2 if words[1] == "-m" else 1
    if words[1] == "-m":
        mod = words[2]
        if mod == "pytest":
            return
        from jaxbandits import moved

        mod = moved.new_path(mod) or mod  # an old path the docs show still runs (tests/test_moved.py)
        src = ROOT / (mod.replace(".", "/") + ".py")
    else:
        src = ROOT / words[i]
    assert src.is_file(), f"{src}: no such file"
    text = src.read_text()
    for w in words[i + 1:]:
        if w.startswith("--"):
            assert f'"{w}"' in text or f"'{w}'" in text, f"{src.name} declares no option {w}"


def _check_pip(words):
    for w in words:
        m = re.fullmatch(r"(?:\.|jaxbandits)\[(\w+)\]", w)
        if m:
            assert m.group(1) in _extras(), f"pip install {w}: pyproject.toml has no extra {m.group(1)!r}"


def _check_mkdocs(words):
    import yaml

    assert words[1] in ("serve", "build")
    plugins = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["plugins"]
    names = [p if isinstance(p, str) else next(iter(p)) for p in plugins]
    docs = " ".join(_extras()["docs"])
    assert "mkdocs" in docs
    for p in names:
        assert p == "search" or p in docs, f"mkdocs.yml uses the plugin {p!r}, which the docs extra lacks"


def check(cmd, written):
    for words in _split(cmd):
        if words[0].startswith(".venv/bin/"):
            words = [words[0][len(".venv/bin/"):]] + words[1:]
        head = words[0]
        if head == "srun":
            words, head = words[1:], words[1]
        if head == "wait":
            continue
        if head == "jaxbandits":
            _check_jaxbandits(words[1:], written)
            for i, w in enumerate(words):  # a file the command writes (--out, > FILE) is there for the next
                if w == "--output" and i + 1 < len(words):
                    written.add(words[i + 1])
            m = re.search(r">\s*(\S+\.toml)", cmd)
            if m:
                written.add(m.group(1))
        elif head in ("python", "python3"):
            if words[1:3] == ["-m", "venv"]:
                continue
            _check_python(words)
        elif head == "pip":
            _check_pip(words)
        elif head == "mkdocs":
            _check_mkdocs(words)
        elif head == "pytest":
            continue
        elif head == "curl":
            continue  # test_documented_curl_exchanges
        elif head.startswith("#"):
            continue
        else:
            raise AssertionError(f"no check for the documented command {cmd!r}")


def test_every_documented_command_is_checked():
    cmds = documented_commands()
    assert len(cmds) > 60  # the collector finds them (README, cli, index, reproductions, ...)
    written = set()
    bad = []
    for page, cmd in cmds:
        if cmd in FRAGMENTS or cmd.startswith(("#!", "#SBATCH")):
            continue
        try:
            check(cmd, written)
        except BaseException as e:  # noqa: BLE001  (argparse's usage errors included)
            bad.append(f"{page}: {cmd!r}: {type(e).__name__}: {e}")
    assert not bad, "\n".join(bad)


def test_collector_catches_a_wrong_documented_command():
    with pytest.raises(Exception, match="--bogus"):
        check("jaxbandits run quickstart --bogus 4", set())
    with pytest.raises(AssertionError, match="no extra 'doc'"):
        check("pip install -e '.[doc]'", set())
    with pytest.raises(AssertionError, match="no such file"):
        check("python benchmarks/nope.py --runs 3", set())
    with pytest.raises(AssertionError, match="declares no option --bogus"):
        check("python benchmarks/limits.py --bogus 3", set())
    with pytest.raises(Exception, match="no-such"):
        check("jaxbandits run no-such-experiment", set())
    with pytest.raises(AssertionError, match="no command 'rnu'"):
        check("jaxbandits rnu", set())


def test_getting_started_sequence_runs_as_written(tmp_path, monkeypatch):
    """docs/index.md: the quickstart, then its --set re-run, in one working folder, as written
    (with a tiny --runs/--horizon appended): the second must not meet the first's results."""
    from jaxbandits.apps.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JAXBANDITS_CACHE_DIR", str(tmp_path / "cache"))
    text = (ROOT / "docs/index.md").read_text()
    first = re.search(r"\.venv/bin/(jaxbandits run quickstart)\n", text).group(1)
    again = re.search(r"`(jaxbandits run quickstart --set [^`]+)`", text).group(1)
    tiny = ["--runs", "2", "--horizon", "30", "--no-progress", "--single-device"]
    for cmd in (first, again):
        assert main(shlex.split(cmd)[1:] + tiny) == 0, cmd
    assert (tmp_path / "results/quickstart/summary.json").is_file()


#: The documented runs and fits, as written (not the fragments, not the files a page writes first:
#: test_every_documented_command_is_checked reads those).
HEAVY = sorted({c for p, c in documented_commands() if re.match(r"jaxbandits (run|fit) ", c) and not PLACEHOLDER.search(c)
                and c not in FRAGMENTS and ".toml" not in c and "--distributed" not in c and "--processes" not in c})


@pytest.mark.slow
@pytest.mark.parametrize("cmd", HEAVY)
def test_documented_heavy_commands_run(cmd, tmp_path, monkeypatch):
    """The documented runs and fits, as written (minutes each: slow)."""
    import subprocess

    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    for c in _split(cmd):
        r = subprocess.run([sys.executable, "-m", "jaxbandits.apps.cli"] + c[1:], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_documented_curl_exchanges(tmp_path):
    """docs/online.md: its banners.toml served, then its curl exchanges replayed as written (the
    HTTP app in process): every response is the one the page shows."""
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    import json

    from fastapi.testclient import TestClient

    from jaxbandits.apps import serve

    text = (ROOT / "docs/online.md").read_text()
    toml = next(b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if b.startswith("# banners.toml"))
    (tmp_path / "banners.toml").write_text(toml)
    svc = serve.Service(serve.load_config(tmp_path / "banners.toml"), str(tmp_path / "banners.db"))
    lines = text.splitlines()
    exchanges = [(lines[i], lines[i + 1]) for i in range(len(lines) - 1) if lines[i].startswith("$ curl")]
    assert len(exchanges) >= 4
    with TestClient(serve.create_app(svc)) as c:
        for cmd, shown in exchanges:
            words = shlex.split(_strip_comment(cmd[2:]))
            url, body = words[words.index("-XPOST") + 1], words[words.index("-d") + 1]
            r = c.post(url.split("8000", 1)[1], content=body)
            assert r.json() == json.loads(shown), (cmd, r.text)
    svc.close()
