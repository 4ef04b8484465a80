# The Makefile owns the virtual environment in .venv/.
# torch==2.13.0 is installed first so pip takes the CPU build from local disk
# instead of resolving a multi-GB CUDA build.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export MUJOCO_GL ?= egl
# Let Python write its bytecode caches. pip installs with --no-compile (below), so where
# PYTHONDONTWRITEBYTECODE is set (it is on this project's CI machines) every process would
# compile torch and the rest from source again: 12 s more per CLI subprocess here.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install demo test venvs test-main test-fast bench clean

# Every venv installs its requirements first (tools/requirements.py reads them from
# pyproject.toml) and then the project with --no-deps: only that step writes into the
# source tree (robot_learn.egg-info), so it runs under a lock and the venvs can build in
# parallel (`make venvs`). --no-compile: pip's bytecode compilation of every installed
# file (torch's alone took 33 s of a 48 s install here) is left to the first import.
PIP_INSTALL = pip install -q --no-compile
LOCKED = flock .venv-build.lock

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/$(PIP_INSTALL) --upgrade pip
	$(BIN)/$(PIP_INSTALL) torch==2.13.0
	$(PY) tools/requirements.py dev fleet > $(VENV)/requirements.txt
	$(BIN)/$(PIP_INSTALL) -r $(VENV)/requirements.txt
	$(LOCKED) $(BIN)/$(PIP_INSTALL) --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# The deployable pixel policy (cameras, proprioception, instruction) on the default task.
demo: $(STAMP)
	$(BIN)/robot-learn train policy=diffusion_pixels

# The full suite: the main tests in .venv, then the LeRobot interop tests and the
# external-benchmark adapter tests, each in the venv their pins need (built on
# first use; a venv that cannot be built fails the run).
test: venvs
	$(MAKE) --no-print-directory test-main test-lerobot test-bench

# The three venvs and the browser for the console tests, set up side by side (their
# downloads overlap).
venvs:
	$(MAKE) --no-print-directory -j4 $(STAMP) $(LEROBOT_STAMP) $(BENCH_STAMP) chromium

test-main: $(STAMP) chromium
	$(BIN)/python -m pytest -q -ra --durations=30 -n 2 --dist loadfile

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -ra -m "not slow" -n 2 --dist loadfile

# Debian's chromium for the console's browser tests (tests/console, driven by Playwright,
# whose own browser download cannot work here); apt installs it only when it is missing.
CHROMIUM := /usr/bin/chromium

.PHONY: chromium

chromium:
	test -x $(CHROMIUM) || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# Side-by-side benchmarks (results are recorded in docs/benchmarks.md).
bench: $(STAMP)
	for b in env store train inference hardware; do $(BIN)/python benchmarks/bench_$$b.py || exit 1; done

clean:
	rm -rf $(VENV) .venv-lerobot .venv-bench outputs

# ---------------------------------------------------------------------------
# GPU check (benchmarks/gpu_check.py): the `gpu` tests in tests/gpu, then a short
# pixel-policy training on the GPU, and outputs/gpu_check/report.json. Without a
# CUDA device it says so and exits 0 having run nothing. It needs no network and
# does not depend on $(STAMP) (pip would fail offline), but it needs a Python whose
# torch is a CUDA build and that has this repo installed (`pip install --no-deps
# --no-build-isolation -e .` works offline) with its dependencies. That is GPU_PY:
# .venv/bin/python by default, whose torch after `make install` is the CPU build;
# on a GPU box use a .venv with a CUDA torch, or another Python, e.g.
# `make gpu-check GPU_PY=python3`. The script names whatever is missing (exit 2).
GPU_PY ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)

.PHONY: gpu-check

gpu-check:
	$(GPU_PY) benchmarks/gpu_check.py

# ---------------------------------------------------------------------------
# LeRobotDataset v3 interop (robot_learn/interop, tests_lerobot/) in its own venv.
# lerobot 0.4.x pins torch<2.11, so it cannot share .venv (torch 2.13.0 CPU).
# Here torch 2.14.1 + torchvision 0.29.1 come from the machine's local wheels,
# lerobot is installed with --no-deps, and only what its dataset code needs is
# added, under lerobot's own pins (huggingface-hub<0.36, av<16, ...) plus
# numpy<2.4 (lerobot 0.4.4 hands datasets (1,)-shaped scalars, which numpy 2.4
# refuses to convert). draccus, einops, pyserial and deepdiff let lerobot's policy
# code import (benchmarks/bench_vs_lerobot.py). Every step must succeed: a venv
# that cannot be built fails the target, and the tests import lerobot without skipping.
LEROBOT_VENV := .venv-lerobot
LEROBOT_BIN := $(LEROBOT_VENV)/bin
LEROBOT_STAMP := $(LEROBOT_VENV)/.installed
LEROBOT_VERSION := 0.4.4
LEROBOT_DEPS := 'numpy>=2,<2.4' 'datasets>=4.0,<5' 'huggingface-hub>=0.34.2,<0.36' \
	'diffusers>=0.30,<0.36' 'av>=15,<16' 'jsonlines>=4,<5' 'packaging>=24.2,<26' \
	'accelerate>=1.10,<2' 'pytest>=8' 'pytest-timeout>=2.3' \
	'draccus==0.10.0' 'einops>=0.8,<0.9' 'pyserial>=3.5,<4' 'deepdiff>=7.0.1,<9'

.PHONY: test-lerobot

$(LEROBOT_STAMP): pyproject.toml
	test -d $(LEROBOT_VENV) || $(PY) -m venv $(LEROBOT_VENV)
	$(LEROBOT_BIN)/$(PIP_INSTALL) --upgrade pip
	$(LEROBOT_BIN)/$(PIP_INSTALL) torch==2.14.1 torchvision==0.29.1
	$(PY) tools/requirements.py > $(LEROBOT_VENV)/requirements.txt
	$(LEROBOT_BIN)/$(PIP_INSTALL) -r $(LEROBOT_VENV)/requirements.txt $(LEROBOT_DEPS)
	$(LOCKED) $(LEROBOT_BIN)/$(PIP_INSTALL) --no-deps -e .
	$(LEROBOT_BIN)/$(PIP_INSTALL) --no-deps lerobot==$(LEROBOT_VERSION)
	$(LEROBOT_BIN)/python -c "import lerobot.datasets.lerobot_dataset, lerobot.policies.diffusion.modeling_diffusion, robot_learn.interop.lerobot_io"
	touch $(LEROBOT_STAMP)

test-lerobot: $(LEROBOT_STAMP)
	OMP_NUM_THREADS=1 $(LEROBOT_BIN)/python -m pytest -q -ra tests_lerobot

# Our diffusion policy against LeRobot's at the same size, in one process and one torch
# (benchmarks/bench_vs_lerobot.py; its `loader` part also needs a demo store).
.PHONY: bench-lerobot
bench-lerobot: $(LEROBOT_STAMP)
	$(LEROBOT_BIN)/python benchmarks/bench_vs_lerobot.py policy

# ---------------------------------------------------------------------------
# External benchmarks (envs/external/, tests_external/): gym-pusht, Meta-World v3,
# gym-aloha, in their own venv. metaworld 3.1.1 pins mujoco==3.3.0 (metaworld
# 3.0.0, the last without the pin, breaks on mujoco 4.0), so .venv keeps mujoco
# 4.0 and this venv gets 3.3.0 with dm-control 1.0.28 and gym-aloha 0.1.5, all
# resolved together by ONE pip command over the `bench` extra. (Installing the
# extra into a venv that already has mujoco 4.0 needs
# `pip uninstall -y mujoco mujoco-core mujoco-studio` first.) The venv ignores
# itself in git. Run the adapters through .venv-bench/bin/robot-learn.
BENCH_VENV := .venv-bench
BENCH_BIN := $(BENCH_VENV)/bin
BENCH_STAMP := $(BENCH_VENV)/.installed

.PHONY: test-bench

$(BENCH_STAMP): pyproject.toml
	test -d $(BENCH_VENV) || $(PY) -m venv $(BENCH_VENV)
	echo "*" > $(BENCH_VENV)/.gitignore
	$(BENCH_BIN)/$(PIP_INSTALL) --upgrade pip
	$(BENCH_BIN)/$(PIP_INSTALL) torch==2.13.0
	$(PY) tools/requirements.py dev bench > $(BENCH_VENV)/requirements.txt
	$(BENCH_BIN)/$(PIP_INSTALL) -r $(BENCH_VENV)/requirements.txt
	$(LOCKED) $(BENCH_BIN)/$(PIP_INSTALL) --no-deps -e .
	$(BENCH_BIN)/python -c "import gym_pusht, gym_aloha, metaworld, robot_learn.envs.external"
	touch $(BENCH_STAMP)

test-bench: $(BENCH_STAMP)
	OMP_NUM_THREADS=1 $(BENCH_BIN)/python -m pytest -q -ra tests_external
