"""evalkit as a student gets it: built into a wheel, installed in a fresh virtual environment.

The sdist is built from the repository and the wheel from the unpacked sdist (what ``python -m
build`` does, here with setuptools' PEP 517 backend called directly, offline). The wheel is
installed with ``pip install --no-deps --no-index`` into a new venv under ``tmp_path``; the
dependencies are the ones of the interpreter running this test, put on the new venv's path by a
``.pth`` file (so nothing is downloaded, and the repository's editable install is *not* on that
path: the ``.pth`` files of the test's site-packages are not processed). Everything then runs in
that venv with an empty HOME, no ``EVALKIT_DATA`` and a working folder outside the repository:
``evalkit --version``/``--help``, ``evalkit course``, one real-data lesson executed with nbclient
in the copied course, lesson 09's lookup of its example logs (its first code cell and its
solutions', run from a course folder), and ``evalkit report`` on a copied fixture log. An audit hook in the
processes that run the lesson and the report records every file opened or folder listed under the
repository root (other than the dependencies' site-packages); any such read fails the test, as
does an ``evalkit`` imported from anywhere but the new venv.

Marked ``install``; the module-scoped fixtures build and install once (about a minute).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from evalkit.datasets import DATASETS

pytestmark = [pytest.mark.install,
              pytest.mark.skipif(sys.platform == "win32", reason="the venv layout used here (bin/) is POSIX")]

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
SOLUTIONS = sorted(p.name for p in (ROOT / "notebooks" / "solutions").glob("*.ipynb"))
RESULTS = sorted(p.name for p in (ROOT / "benchmarks" / "results").glob("*.json"))
# A short lesson that reads real data (MMLU-Pro and ChemBench from the package's copy).
LESSON = "04.3-missing-reasons-and-a-tipping-point.ipynb"
# The lesson whose example logs ship in the package (evalkit/_examples), and its solutions.
LESSON_09 = "09.1-your-own-eval-log-reading-a-report.ipynb"
SOLUTIONS_09 = "solutions/09.1-your-own-eval-log-reading-a-report-solutions.ipynb"
FIXTURE_LOG = (ROOT / "tests" / "fixtures" / "eval_logs" / "inspect_ai" / "logs" / "eval"
               / "2026-11-30T11-09-42-00-00_mcq-subjects_5Xdjo8KqChV8PRDEuEbgtb.eval")
# PyPI refuses files over 100 MB; the wheel should stay far below.
WHEEL_LIMIT_MB = 40

# The folders the new venv may read under the repository root: the dependencies' site-packages
# (the test's .venv lives inside the repository).
DEPS = sorted({str(Path(p).resolve()) for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]})

BUILD = """
import sys
import setuptools.build_meta as backend
kind, out = sys.argv[1], sys.argv[2]
print((backend.build_sdist if kind == "sdist" else backend.build_wheel)(out))
"""

# Prepended to the code the new venv runs: record every file opened, or folder listed, under the
# repository root that is not a dependency.
AUDIT = textwrap.dedent(f"""
    import os as _os, sys as _sys
    _REPO, _DEPS, REPO_READS = {str(ROOT)!r}, {DEPS!r}, []
    def _evalkit_audit(event, args):
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, _os.PathLike)):
            path = _os.path.abspath(_os.fsdecode(args[0]))
            if (path == _REPO or path.startswith(_REPO + _os.sep)) and not any(
                    path == d or path.startswith(d + _os.sep) for d in _DEPS):
                REPO_READS.append(path)
    _sys.addaudithook(_evalkit_audit)
""")

CHECK = textwrap.dedent("""
    import json as _json, sys as _sys
    import evalkit as _ek, evalkit.datasets as _ds
    print("EVALKIT-CHECK " + _json.dumps({
        "evalkit": _ek.__file__, "python": _sys.executable, "repo_data": str(_ds.REPO_DATA),
        "roots": [[str(r), o] for r, o in _ek.dataset_search_path()],
        "results_dirs": [str(p) for p in _ds.RESULTS_DIRS], "repo_reads": sorted(set(REPO_READS))[:20]}))
""")


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist built from the repository and the wheel built from the unpacked sdist."""
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "EVALKIT_DATA"}
    done = _run([sys.executable, "-c", BUILD, "sdist", str(out)], ROOT, env)
    assert done.returncode == 0, done.stderr[-3000:]
    sdist = out / done.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
            tar.extractall(out / "src", filter="data")
        else:
            tar.extractall(out / "src")  # noqa: S202 (the sdist this test has just built)
    (src,) = (out / "src").iterdir()
    done = _run([sys.executable, "-c", BUILD, "wheel", str(out)], src, env)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"sdist": sdist, "wheel": out / done.stdout.strip().splitlines()[-1]}


@pytest.fixture(scope="module")
def venv(dist: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A fresh venv outside the repository with the wheel installed, an empty HOME and work folder."""
    base = tmp_path_factory.mktemp("student")
    prefix, home, work = base / "venv", base / "home", base / "work"
    home.mkdir()
    work.mkdir()
    done = _run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], base, dict(os.environ))
    assert done.returncode == 0, done.stderr
    python = prefix / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                        dict(os.environ)).stdout.strip())
    (purelib / "_evalkit_test_dependencies.pth").write_text("\n".join(DEPS) + "\n")
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                 "--no-compile", str(dist["wheel"])], base, dict(os.environ))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    drop = {"EVALKIT_DATA", "PYTHONPATH", "VIRTUAL_ENV", "MPLBACKEND", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR",
            "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "PYTHONSTARTUP", "PYTHONHOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("XDG_")}
    env.update(HOME=str(home), PATH=f"{prefix / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONNOUSERSITE="1", JUPYTER_PATH=str(prefix / "share" / "jupyter"), JUPYTER_PLATFORM_DIRS="1",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # the kernel nbclient starts is this venv's python (not a `python3` kernel the machine may have)
    done = _run([str(python), "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", "python3"], work, env)
    assert done.returncode == 0, done.stderr[-2000:]
    return {"prefix": prefix, "python": python, "home": home, "work": work, "env": env, "purelib": purelib}


def test_wheel_and_sdist_carry_the_data_the_lessons_and_the_results(dist: dict[str, Path]) -> None:
    wheel = dist["wheel"]
    size_mb = wheel.stat().st_size / 1e6
    sdist_mb = dist["sdist"].stat().st_size / 1e6
    print(f"wheel {wheel.name}: {size_mb:.1f} MB; sdist {dist['sdist'].name}: {sdist_mb:.1f} MB")
    assert size_mb < WHEEL_LIMIT_MB
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for spec in DATASETS.values():
            for filename, sha in spec.files.items():
                member = f"evalkit/_data/{spec.folder}/{filename}"
                assert member in names, f"the wheel lacks {member}"
                assert _sha256(zf.read(member)) == sha, f"{member} in the wheel has another sha256"
        assert {f"evalkit/_course/{n}" for n in LESSONS} | {f"evalkit/_course/solutions/{n}" for n in SOLUTIONS} == {
            n for n in names if n.startswith("evalkit/_course/")}
        assert {f"evalkit/_results/{n}" for n in RESULTS} == {n for n in names if n.startswith("evalkit/_results/")}
        assert "evalkit/_data/README.md" in names and "evalkit/datasets.py" in names
        assert not [n for n in names if ".ipynb_checkpoints" in n or "__pycache__" in n or n.startswith("tests/")]
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "evalkit = evalkit.__main__:main" in zf.read(entry_points).decode()
    with tarfile.open(dist["sdist"]) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {f"notebooks/{n}" for n in LESSONS} <= members and {f"notebooks/solutions/{n}" for n in SOLUTIONS} <= members
    assert {f"data/{s.folder}/{f}" for s in DATASETS.values() for f in s.files} <= members
    assert {f"benchmarks/results/{n}" for n in RESULTS} <= members and "setup.py" in members


def test_installed_evalkit_comes_from_the_venv_and_reads_only_the_package(venv: dict) -> None:
    env, work, prefix = venv["env"], venv["work"], venv["prefix"]
    code = AUDIT + "import evalkit as ek\nassert ek.dataset_list()['found'].all()\n" + CHECK
    done = _run([str(venv["python"]), "-c", code], work, env)
    assert done.returncode == 0, done.stderr[-3000:]
    check = json.loads(done.stdout.split("EVALKIT-CHECK ", 1)[1])
    assert Path(check["evalkit"]).is_relative_to(prefix) and not Path(check["evalkit"]).is_relative_to(ROOT)
    assert check["repo_data"] == "None" and check["repo_reads"] == []
    package_data = str(venv["purelib"] / "evalkit" / "_data")
    assert check["roots"] == [[package_data, "installed package"], [str(venv["home"] / ".cache" / "evalkit"),
                                                                   "user cache"]]
    assert check["results_dirs"] == [str(venv["purelib"] / "evalkit" / "_results")]

    # the audit hook does see a read from the repository: point EVALKIT_DATA at its data/
    seen = _run([str(venv["python"]), "-c", AUDIT + "import evalkit as ek\nek.dataset_items('livecodebench_gen')\n"
                 + CHECK], work, {**env, "EVALKIT_DATA": str(ROOT / "data")})
    assert seen.returncode == 0, seen.stderr[-3000:]
    reads = json.loads(seen.stdout.split("EVALKIT-CHECK ", 1)[1])["repo_reads"]
    assert str(ROOT / "data" / "livecodebench_gen" / "items.csv") in reads

    version = _run([str(prefix / "bin" / "evalkit"), "--version"], work, env)
    assert version.returncode == 0 and version.stdout.strip().startswith("evalkit 0.")
    helped = _run([str(prefix / "bin" / "evalkit"), "--help"], work, env)
    assert helped.returncode == 0 and all(c in helped.stdout for c in ("course", "lab", "report", "--version"))


def test_course_copies_the_lessons_and_solutions_and_nothing_else(venv: dict) -> None:
    env, work, evalkit = venv["env"], venv["work"], str(venv["prefix"] / "bin" / "evalkit")
    done = _run([evalkit, "course", "my-course"], work, env)
    assert done.returncode == 0, done.stderr
    assert f"copied {len(LESSONS)} lessons and {len(SOLUTIONS)} solutions" in done.stdout
    course = work / "my-course"
    copied = sorted(str(p.relative_to(course)) for p in course.rglob("*") if p.is_file())
    assert copied == sorted(LESSONS + [f"solutions/{n}" for n in SOLUTIONS])
    assert (course / LESSONS[0]).read_bytes() == (ROOT / "notebooks" / LESSONS[0]).read_bytes()

    (course / "my-notes.txt").write_text("mine")
    refused = _run([evalkit, "course", "my-course"], work, env)
    assert refused.returncode == 2 and "not empty" in refused.stderr and "--force" in refused.stderr
    (course / LESSONS[0]).write_text("edited")
    forced = _run([evalkit, "course", "my-course", "--force"], work, env)
    assert forced.returncode == 0, forced.stderr
    assert (course / LESSONS[0]).read_bytes() == (ROOT / "notebooks" / LESSONS[0]).read_bytes()
    assert (course / "my-notes.txt").read_text() == "mine"

    no_folder = _run([evalkit, "lab", "no-such-folder"], work, env)
    assert no_folder.returncode == 2 and "evalkit course" in no_folder.stderr
    cmd = _run([str(venv["python"]), "-c", "from pathlib import Path; from evalkit.__main__ import lab_command; "
                "print(lab_command(Path('my-course'), no_browser=True))"], work, env)
    assert cmd.returncode == 0, cmd.stderr
    expected = [str(venv["python"]), "-m", "jupyterlab", f"--ServerApp.root_dir={course.resolve()}"]
    expected += ["--allow-root"] if os.geteuid() == 0 else []
    assert eval(cmd.stdout) == [*expected, "--no-browser"]  # noqa: S307 (a list printed by the line above)


def test_a_real_data_lesson_runs_in_the_copied_course(venv: dict) -> None:
    env, work = venv["env"], venv["work"]
    course = work / "lesson-run"
    done = _run([str(venv["prefix"] / "bin" / "evalkit"), "course", str(course)], work, env)
    assert done.returncode == 0, done.stderr
    runner = textwrap.dedent(f"""
        import nbformat
        from nbclient import NotebookClient
        nb = nbformat.read({LESSON!r}, as_version=4)
        nb.cells.insert(0, nbformat.v4.new_code_cell({AUDIT!r}))
        nb.cells.append(nbformat.v4.new_code_cell({CHECK!r}))
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={{"metadata": {{"path": "."}}}}).execute()
        for out in nb.cells[-1].outputs:
            print(out.get("text", ""))
    """)
    kernel_env = {**env, "PYTHONWARNINGS": "ignore"}
    ran = _run([str(venv["python"]), "-c", runner], course, kernel_env, timeout=900)
    assert ran.returncode == 0, (ran.stdout[-2000:] + ran.stderr[-4000:])
    check = json.loads(ran.stdout.split("EVALKIT-CHECK ", 1)[1].splitlines()[0])
    assert Path(check["evalkit"]).is_relative_to(venv["prefix"]) and check["python"] == str(venv["python"])
    assert [o for _, o in check["roots"]] == ["installed package", "user cache"]
    assert check["repo_reads"] == [], f"the lesson read from the repository: {check['repo_reads']}"


def test_report_runs_on_a_fixture_log_outside_the_repository(venv: dict) -> None:
    env, work = venv["env"], venv["work"]
    logs = work / "logs"
    logs.mkdir()
    shutil.copyfile(FIXTURE_LOG, logs / FIXTURE_LOG.name)
    code = AUDIT + textwrap.dedent("""
        from evalkit.__main__ import main
        status = main(["report", "logs", "--out", "report-out"])
    """) + CHECK + "_sys.exit(status)\n"
    done = _run([str(venv["python"]), "-c", code], work, env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "evalkit report:" in done.stdout and "models" in done.stdout
    assert (work / "report-out" / "report.md").is_file() and (work / "report-out" / "report.html").is_file()
    check = json.loads(done.stdout.split("EVALKIT-CHECK ", 1)[1].splitlines()[0])
    assert Path(check["evalkit"]).is_relative_to(venv["prefix"]) and check["repo_reads"] == []


def test_lesson_09_finds_its_example_logs_in_the_installed_package(venv: dict) -> None:
    """Lesson 09's first code cell and its solutions', run from a course folder, find the example logs in
    the package's copy (``evalkit/_examples``) through ``ek.example_path``, not in the repository; so do the
    lm-eval logs and the MMLU-Pro log script that parts 09.2 and 09.3 locate with it."""
    env, work, purelib = venv["env"], venv["work"], venv["purelib"]
    course = work / "course-09"
    (course / "solutions").mkdir(parents=True)
    cells = {}
    for rel in (LESSON_09, SOLUTIONS_09):
        nb = json.loads((purelib / "evalkit" / "_course" / rel).read_text(encoding="utf-8"))
        cells[rel] = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    code = AUDIT + textwrap.dedent(f"""
        import json as _json9, os as _os9, sys as _sys9
        _found = {{}}
        for _rel, _cell in {cells!r}.items():
            _os9.chdir(_os9.path.join({str(course)!r}, _os9.path.dirname(_rel)))
            _ns = {{}}
            exec(_cell, _ns)
            _found[_rel] = str(_ns["INSPECT"].resolve())
        _ek9 = _ns["ek"]
        _found["lm_eval"] = str(_ek9.example_path("tests/fixtures/eval_logs/lm_eval/output"))
        _sys9.path.insert(0, str(_ek9.example_path("scripts/make_mmlu_inspect_log.py").parent))
        import make_mmlu_inspect_log
        _found["script"] = str(__import__("pathlib").Path(make_mmlu_inspect_log.__file__).resolve())
        _found["n_rows"] = len(_ek9.log_read(_ns["INSPECT"]))
        print("LESSON09 " + _json9.dumps(_found))
    """) + CHECK
    done = _run([str(venv["python"]), "-c", code], work, {**env, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    found = json.loads(done.stdout.split("LESSON09 ", 1)[1].splitlines()[0])
    examples = (purelib / "evalkit" / "_examples").resolve()
    for rel in (LESSON_09, SOLUTIONS_09):
        assert Path(found[rel]) == examples / "tests" / "fixtures" / "eval_logs" / "inspect_ai" / "logs" / "eval", rel
    assert Path(found["lm_eval"]) == examples / "tests" / "fixtures" / "eval_logs" / "lm_eval" / "output"
    assert Path(found["script"]) == examples / "scripts" / "make_mmlu_inspect_log.py"
    import evalkit as ek

    assert found["n_rows"] == len(ek.log_read(FIXTURE_LOG.parent)) > 0
    check = json.loads(done.stdout.split("EVALKIT-CHECK ", 1)[1].splitlines()[0])
    assert Path(check["evalkit"]).is_relative_to(venv["prefix"]) and check["repo_reads"] == []
