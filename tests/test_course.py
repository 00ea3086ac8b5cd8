"""`grpo-lab lab` (grpo_lab.course): the course copy never loses a student's edits (issue 21 #3)."""
import json
import os
import sys

import pytest

from grpo_lab import course
from grpo_lab.__main__ import main as cli


def _never(question):
    raise AssertionError(f"asked although nothing was edited: {question}")


def test_copy_has_every_english_and_chinese_notebook(tmp_path):
    src = course.source_dir()
    done = course.copy_course(tmp_path / "c", ask=_never, log=lambda s: None)
    shipped = sorted(p.name for p in src.glob("*.ipynb")) + sorted(f"zh/{p.name}" for p in (src / "zh").glob("*.ipynb"))
    assert sorted(done["copied"]) == sorted(shipped)
    assert any(n.startswith("zh/") for n in shipped) and any(not n.startswith("zh/") for n in shipped)
    for rel in shipped:
        assert (tmp_path / "c" / rel).read_bytes() == (src / rel).read_bytes()


def test_second_copy_changes_nothing(tmp_path):
    course.copy_course(tmp_path, ask=_never, log=lambda s: None)
    again = course.copy_course(tmp_path, ask=_never, log=lambda s: None)
    assert again["copied"] == [] and again["kept"] == [] and len(again["unchanged"]) == len(course.course_files())


def _older_copy_recorded(folder, name):
    """Make the manifest say the last copy of ``name`` was an older shipped version (a package update)."""
    man = json.loads((folder / course.MANIFEST).read_text())
    man[name] = "0" * 64
    (folder / course.MANIFEST).write_text(json.dumps(man))


def _copy_and_edit(folder):
    """Copy the course, then make the student's edit to its first notebook: (name, path, edited bytes)."""
    course.copy_course(folder, ask=_never, log=lambda s: None)
    name = course.course_files()[0]
    nb = folder / name
    nb.write_text(nb.read_text() + "\n")
    return name, nb, nb.read_bytes()


def test_edited_notebook_is_kept_without_a_question_while_nothing_newer_is_shipped(tmp_path):
    name, nb, edited = _copy_and_edit(tmp_path)
    for _ in range(2):                         # every later start: no question, nothing lost
        done = course.copy_course(tmp_path, ask=_never, log=lambda s: None)
        assert done["yours"] == [name] and done["copied"] == [] and nb.read_bytes() == edited


def test_edited_notebook_is_kept_unless_the_student_agrees_or_forces(tmp_path):
    name, nb, edited = _copy_and_edit(tmp_path)
    _older_copy_recorded(tmp_path, name)       # the course has a newer version to offer
    asked = []
    kept = course.copy_course(tmp_path, ask=lambda q: asked.append(q) or False, log=lambda s: None)
    assert kept["kept"] == [name] and nb.read_bytes() == edited and str(nb) in asked[0]
    _older_copy_recorded(tmp_path, name)
    yes = course.copy_course(tmp_path, ask=lambda q: True, log=lambda s: None)
    assert yes["copied"] == [name] and nb.read_bytes() == (course.source_dir() / name).read_bytes()
    nb.write_bytes(edited)
    forced = course.copy_course(tmp_path, force=True, ask=_never, log=lambda s: None)
    assert forced["copied"] == [name] and nb.read_bytes() != edited


def test_unedited_old_copy_is_refreshed_without_asking(tmp_path):
    """A notebook the student never changed, from an older package, is replaced silently."""
    course.copy_course(tmp_path, ask=_never, log=lambda s: None)
    name = course.course_files()[0]
    old = b'{"old": "shipped version"}\n'
    (tmp_path / name).write_bytes(old)
    man = json.loads((tmp_path / course.MANIFEST).read_text())
    import hashlib
    man[name] = hashlib.sha256(old).hexdigest()
    (tmp_path / course.MANIFEST).write_text(json.dumps(man))
    done = course.copy_course(tmp_path, ask=_never, log=lambda s: None)
    assert done["copied"] == [name]


def test_non_interactive_ask_says_no(monkeypatch):
    monkeypatch.setattr(sys, "stdin", None)
    assert course._ask("overwrite?") is False


def test_lab_command_allow_root_zh_and_passthrough(tmp_path):
    cmd = course.lab_command(tmp_path, zh=True, extra=["--no-browser"])
    assert cmd[:3] == [sys.executable, "-m", "jupyterlab"]
    assert cmd[3] == str(tmp_path / "zh") and cmd[-1] == "--no-browser"
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
    assert course.lab_command(tmp_path)[3] == str(tmp_path)


@pytest.mark.skipif(os.name != "posix", reason="POSIX exec")
def test_lab_becomes_jupyterlab_so_signals_reach_the_server(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_execv(path, argv):
        calls.append((path, argv))
        raise SystemExit(0)                       # execv does not return

    monkeypatch.setattr(course.os, "execv", fake_execv)
    monkeypatch.setattr(course.subprocess, "call", lambda *a, **k: pytest.fail("waited on a child process"))
    with pytest.raises(SystemExit):
        course.main([str(tmp_path / "c"), "--no-browser", "--port=8899"])
    want = course.lab_command(tmp_path / "c", extra=["--no-browser", "--port=8899"])
    assert calls == [(want[0], want)]


def test_copy_only_through_python_m(tmp_path, capsys):
    assert cli(["lab", str(tmp_path / "x"), "--copy-only"]) == 0
    assert "copied to" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "x").glob("*.ipynb")) == \
        sorted(n for n in course.course_files() if "/" not in n)


def test_stray_positional_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli(["lab", str(tmp_path), "other-folder"])
    assert "one FOLDER" in capsys.readouterr().err


def test_unwritable_folder_names_the_argument(tmp_path):
    blocker = tmp_path / "a_file"          # a folder that cannot be made (works as root too)
    blocker.write_text("")
    with pytest.raises(SystemExit, match="FOLDER .* not writable"):
        course.copy_course(blocker / "course", log=lambda s: None)
