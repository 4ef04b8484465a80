# The Makefile owns the virtual environment in .venv/.
# torch==2.13.0 is installed first so pip takes the CPU build from local disk
# instead of resolving a multi-GB CUDA build.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export MUJOCO_GL ?= egl

.PHONY: install demo test test-fast bench clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/robot-learn train

test: $(STAMP)
	$(BIN)/python -m pytest -q -ra

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "not slow"

# Side-by-side benchmarks (results are recorded in docs/benchmarks.md).
bench: $(STAMP)
	for b in env store train inference hardware; do $(BIN)/python benchmarks/bench_$$b.py || exit 1; done

clean:
	rm -rf $(VENV) outputs
