"""Build step (everything else is in pyproject.toml): put the course notebooks into the wheel.

The notebooks have one home, ``notebooks/`` (English) and ``notebooks/zh/`` (Chinese). A
wheel build copies every ``*.ipynb`` found there (a glob: new notebooks are picked up) into
``grpo_lab/course/`` inside the build, so ``pip install .`` ships them and ``grpo-lab lab``
can copy them out; nothing is committed twice. An editable install reads ``notebooks/``.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithCourse(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        src, dest = HERE / "notebooks", Path(self.build_lib) / "grpo_lab" / "course"
        found = sorted(src.glob("*.ipynb")) + sorted(src.glob("zh/*.ipynb"))
        if not found:
            raise SystemExit(f"setup.py: no notebooks in {src}; build from a complete copy of the repository")
        shutil.rmtree(dest, ignore_errors=True)      # a stale build/ must not ship a removed notebook
        for nb in found:
            target = dest / nb.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(nb, target)


setup(cmdclass={"build_py": BuildPyWithCourse})
