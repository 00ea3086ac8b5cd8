"""`pip install .` without make (issue 21 #3): the wheel carries the notebooks (English and
Chinese) and the cached data; its `grpo-lab lab` copies the course out and starts JupyterLab,
and a copied notebook runs under nbval.

Fast on purpose: the wheel is built without build isolation and installed with --no-deps into
a fresh venv that sees this environment's site-packages for the dependencies (a .pth line, so
that environment's own editable grpo_lab is *not* activated: grpo_lab must come from the wheel).
"""
import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _setuptools_at_least(major: int) -> bool:
    from importlib import metadata

    try:
        return int(metadata.version("setuptools").split(".")[0]) >= major
    except (metadata.PackageNotFoundError, ValueError):
        return False


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    wheels = tmp / "dist"
    # build in this environment when its setuptools can (PEP 639 license string: setuptools >= 77),
    # else let pip fetch a build environment
    no_iso = ["--no-build-isolation"] if _setuptools_at_least(77) else []
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *no_iso,
                        "-w", str(wheels), str(ROOT)], capture_output=True, text=True, env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr[-3000:]
    (whl,) = wheels.glob("grpo_lab-*.whl")
    vdir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(vdir)
    py = vdir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "_parent_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(whl)],
                       capture_output=True, text=True, env=env, cwd=tmp)
    assert r.returncode == 0, r.stderr[-3000:]
    return {"py": py, "bin": py.parent, "site": site, "env": env, "tmp": tmp}


def test_wheel_is_imported_with_course_and_data(installed):
    code = ("import grpo_lab, grpo_lab.course as c; from grpo_lab.lm import broken_runs; "
            "print(grpo_lab.__file__); print(c.source_dir()); print(len(broken_runs.load())); "
            "print(*c.course_files())")
    r = subprocess.run([str(installed["py"]), "-c", code], capture_output=True, text=True,
                       env=installed["env"], cwd=installed["tmp"])
    assert r.returncode == 0, r.stderr[-3000:]
    where, src, rows, files = r.stdout.splitlines()
    assert Path(where).is_relative_to(installed["site"]), where        # not the checkout
    assert Path(src) == installed["site"] / "grpo_lab" / "course"
    assert int(rows) > 0
    files = files.split()
    want = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    want_zh = sorted(f"zh/{p.name}" for p in (ROOT / "notebooks" / "zh").glob("*.ipynb"))
    assert files == want + want_zh and want and want_zh


def test_grpo_lab_lab_serves_the_copied_course(installed, tmp_path, lab_server):
    exe = installed["bin"] / ("grpo-lab.exe" if os.name == "nt" else "grpo-lab")
    folder = tmp_path / "my course"
    listing = lab_server(lambda flags: [str(exe), "lab", str(folder), *flags], cwd=tmp_path,
                         env=installed["env"], path="/api/contents")
    assert "00_roadmap.ipynb" in listing and '"zh"' in listing      # the server's root is the copied course
    assert (folder / "zh" / "00_roadmap.ipynb").exists()


def test_copied_notebook_runs_under_nbval(installed, tmp_path):
    r = subprocess.run([str(installed["py"]), "-m", "grpo_lab", "lab", str(tmp_path / "c"), "--copy-only"],
                       capture_output=True, text=True, env=installed["env"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([str(installed["py"]), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                        "--nbval-current-env", str(tmp_path / "c" / "00_roadmap.ipynb")],
                       capture_output=True, text=True, env={**installed["env"], "MPLBACKEND": "Agg"}, cwd=tmp_path)
    assert r.returncode == 0 and " passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
