"""The converted-model cache is keyed by the transformers release (issue 21, a defect of the
matrix): a folder converted by another release (the floor and the newest venv share one cache)
is rebuilt for this one, never silently reused. The conversion is replaced by a tiny model."""
import json
import sys

import pytest
import transformers

from faults import tiny_model
from grpo_lab.lm import pretrained


@pytest.fixture
def fake(tmp_path, monkeypatch):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"not really a gguf")
    calls = []
    monkeypatch.setattr(pretrained, "gguf_path", lambda name: gguf)
    monkeypatch.setattr(pretrained, "_dequantise", lambda g: calls.append(g) or tiny_model())
    monkeypatch.setenv("GRPO_LAB_CACHE", str(tmp_path / "cache"))
    return calls


def test_another_transformers_release_converts_its_own_copy(fake, monkeypatch):
    first = pretrained.resolve("smollm2-135m")
    this = transformers.__version__
    assert json.loads((first / "grpo_lab_source.json").read_text())["transformers"] == this
    # (the module object itself: building a model may swap transformers' lazy module in sys.modules)
    monkeypatch.setattr(sys.modules["transformers"], "__version__", "0.0.1.other")
    second = pretrained.resolve("smollm2-135m")
    assert second != first and len(fake) == 2
    assert json.loads((second / "grpo_lab_source.json").read_text())["transformers"] == "0.0.1.other"
    monkeypatch.setattr(sys.modules["transformers"], "__version__", this)
    assert pretrained.resolve("smollm2-135m") == first and len(fake) == 2     # each release reuses its own


def test_verify_refuses_a_folder_recorded_as_made_by_another_release(fake):
    folder = pretrained.resolve("smollm2-135m")
    source = json.loads((folder / "grpo_lab_source.json").read_text())
    source["transformers"] = "4.57.1"
    (folder / "grpo_lab_source.json").write_text(json.dumps(source))
    problem = pretrained.verify(folder)
    assert problem is not None and "transformers 4.57.1" in problem and transformers.__version__ in problem
    with pytest.warns(UserWarning, match="converted by transformers 4.57.1.*rebuilding"):
        assert pretrained.resolve("smollm2-135m") == folder
    assert len(fake) == 2 and pretrained.verify(folder) is None
