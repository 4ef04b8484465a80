"""`make gpu-check`: the GPU path run end to end, with a JSON report.

1. No CUDA device here: says so and exits 0 having run nothing. A machine that has
   an NVIDIA GPU its torch cannot use, or a Python that lacks this project's
   dependencies, gets a one-line reason and exit 2 (the check did not run).
2. The tests in ``tests/gpu`` (bf16 autocast, CUDA RNG, NCCL, device placement,
   the GPU presets) under pytest, counted from its JUnit XML.
3. A short pixel-policy training on the GPU: ``robot-learn train
   policy=diffusion_pixels_gpu train.device=cuda`` on ``bin_place`` with few demos,
   a short frame-encoder pretraining, a few hundred steps and a few eval episodes.
4. ``<out>/report.json``: versions, the device, test counts, training steps/s,
   eval success and wall time.

Every run starts afresh: ``<out>`` (default ``outputs/gpu_check``) is emptied first.
Needs no network, but a Python whose torch is a CUDA build, with this project
installed (``pip install --no-deps -e .`` works offline) and its dependencies.

    python benchmarks/gpu_check.py [--out outputs/gpu_check] [--steps 400] [--demos 20] [--eval-episodes 10]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Modules the tests and the training import; a GPU box's Python often lacks some.
REQUIRED = ("torch", "numpy", "diffusers", "mujoco", "OpenGL", "gymnasium", "hydra", "omegaconf", "zarr",
            "safetensors", "imageio", "pytest", "robot_learn", "robot_learn.envs")
# Hard limits, well above the expected 1-2 min of tests and 2-3 min of training on an H200.
TESTS_TIMEOUT_S, TRAIN_TIMEOUT_S = 240, 360


def nvidia_gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU, whatever torch says."""
    if Path("/dev/nvidiactl").exists() or any(Path("/proc/driver/nvidia/gpus").glob("*")):
        return True
    if shutil.which("nvidia-smi"):
        try:
            listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return listed.returncode == 0 and "GPU" in listed.stdout
    return False


def preflight() -> tuple[int, str] | None:
    """``(exit code, message)`` when the check must not run here; None when it can."""
    try:
        import torch
    except ImportError as err:
        if not nvidia_gpu_present():
            return 0, f"gpu-check: no CUDA device on this machine (and no torch in {sys.executable}); nothing run"
        return 2, f"gpu-check: this machine has an NVIDIA GPU but {sys.executable} cannot import torch ({err})"
    build = f"torch {torch.__version__}, " + (f"CUDA {torch.version.cuda} build" if torch.version.cuda
                                              else "CPU-only build")
    if not torch.cuda.is_available():
        if not nvidia_gpu_present():
            return 0, f"gpu-check: no CUDA device on this machine ({build}); nothing run"
        return 2, (f"gpu-check: this machine has an NVIDIA GPU but {sys.executable} cannot use it ({build}); "
                   f"run with a Python whose torch is a CUDA build: make gpu-check GPU_PY=/path/to/python")
    missing = []
    for name in REQUIRED:
        try:
            importlib.import_module(name)
        except Exception as err:  # any import failure means the check cannot run
            missing.append(f"{name} ({type(err).__name__}: {err})")
    if missing:
        return 2, (f"gpu-check: {sys.executable} lacks {'; '.join(missing)}. Install the project's "
                   f"dependencies (offline: pip install --no-index --find-links WHEELS ...), then "
                   f"`{sys.executable} -m pip install --no-deps --no-build-isolation -e .`")
    import robot_learn

    if REPO not in Path(robot_learn.__file__).resolve().parents:
        return 2, (f"gpu-check: robot_learn in {sys.executable} is installed from {robot_learn.__file__}, not this "
                   f"checkout; run `{sys.executable} -m pip install --no-deps --no-build-isolation -e {REPO}`")
    problem = rendering_problem()
    if problem:
        return 2, (f"gpu-check: MuJoCo cannot render offscreen with MUJOCO_GL={os.environ['MUJOCO_GL']} ({problem}); "
                   f"the training renders cameras, so this machine needs libEGL and the NVIDIA EGL vendor library")
    return None


def rendering_problem() -> str | None:
    """Why MuJoCo cannot render an offscreen frame here (None when it can)."""
    import mujoco

    try:
        model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><light pos='0 0 1'/><geom size='.1'/>"
                                               "</worldbody></mujoco>")
        renderer = mujoco.Renderer(model, 16, 16)
        renderer.update_scene(mujoco.MjData(model))
        renderer.render()
        renderer.close()
    except Exception as err:  # whatever the GL stack raises, the reason is what matters
        return f"{type(err).__name__}: {err}"
    return None


def environment() -> dict:
    """Versions and the device, for the report."""
    import torch

    props = torch.cuda.get_device_properties(0)
    return {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if torch.distributed.is_nccl_available() else None,
            "device": {"name": props.name, "count": torch.cuda.device_count(),
                       "memory_gib": round(props.total_memory / 2**30, 1), "capability": f"{props.major}.{props.minor}"},
            "cpu_count": os.cpu_count(), "platform": platform.platform()}


def run_logged(command: list[str], log: Path, timeout: float) -> tuple[int, float]:
    """Run ``command`` in the repository with its output in ``log``; returns (exit code,
    seconds); exit code 124 when it ran past ``timeout`` (it and its children are killed)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    t0 = time.perf_counter()
    with open(log, "w") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        # Its own process group, so a timeout also ends the evaluation's worker processes.
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.write(f"\n[gpu-check] stopped after {timeout:.0f} s\n")
            code = 124
    return code, time.perf_counter() - t0


def run_tests(out: Path) -> dict:
    """tests/gpu under pytest; counts from its JUnit XML."""
    xml = out / "gpu_tests.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", f"--junitxml={xml}", "tests/gpu"]
    code, seconds = run_logged(command, out / "gpu_tests.log", TESTS_TIMEOUT_S)
    result = {"command": " ".join(command[1:]), "returncode": code, "time_s": round(seconds, 1),
              "log": str(out / "gpu_tests.log")}
    if not xml.exists():
        return {**result, "passed": 0, "failed": 0, "errors": 1, "skipped": 0, "failures": ["no JUnit XML written"],
                "log_tail": (out / "gpu_tests.log").read_text(errors="replace").splitlines()[-40:]}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failures = []
    for suite in ET.parse(xml).getroot().iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failures.append(f"{case.get('classname')}::{case.get('name')}")
    return {**result, "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
            "failed": counts["failures"], "errors": counts["errors"], "skipped": counts["skipped"],
            "failures": failures}


def train_command(out: Path, args: argparse.Namespace) -> list[str]:
    """``robot-learn train`` (through ``python -m``: no console script needed) with small settings."""
    overrides = [
        "task=bin_place", "policy=diffusion_pixels_gpu", f"run_dir={out / 'train'}",
        f"data.path={out / 'data' / 'bin_place_demos_front_wrist_96.zarr'}", f"data.episodes={args.demos}",
        f"policy.frame_pretraining.resets={args.resets}", "policy.frame_pretraining.expert_episodes=10",
        f"policy.frame_pretraining.steps={args.pretrain_steps}", "policy.frame_pretraining.batch_size=32",
        "train.device=cuda", f"train.steps={args.steps}", f"train.batch_size={args.batch_size}",
        "train.warmup_steps=50", "train.ckpt_every=0", "train.log_every=50", "train.num_threads=8",
        "++train.progress_bar=false", f"eval.episodes={args.eval_episodes}", "eval.videos=0", "eval.workers=4",
    ]
    return [str(Path(sys.executable).with_name("robot-learn")), "train", *overrides]


def run_training(out: Path, args: argparse.Namespace) -> dict:
    """The short GPU training; figures from the run's report.json and the encoder's pretraining.json."""
    command = train_command(out, args)
    log = out / "train.log"
    code, seconds = run_logged(command, log, TRAIN_TIMEOUT_S)
    result = {"command": " ".join(["robot-learn", *command[3:]]), "returncode": code, "time_s": round(seconds, 1),
              "log": str(log)}
    report_path = out / "train" / "report.json"
    if code != 0 or not report_path.exists():
        return {**result, "log_tail": log.read_text(errors="replace").splitlines()[-40:]}
    report = json.loads(report_path.read_text())
    fit = report.get("train", {})
    batch = report["config"]["train"]["batch_size"]
    task, summary = next(iter(report["tasks"].items()))
    pretraining = [json.loads(p.read_text()) for p in (out / "data" / "frame_encoders").glob("*/pretraining.json")]
    return {**result, "report": str(report_path), "policy": report.get("policy", {}).get("preset"),
            "parameters": report.get("policy", {}).get("parameters"), "steps": fit.get("step"),
            "batch_size": batch, "train_time_s": fit.get("time"), "final_loss": fit.get("loss"),
            "steps_per_s": round(fit["samples_per_s"] / batch, 2) if fit.get("samples_per_s") else None,
            "samples_per_s": fit.get("samples_per_s"), "demos": report.get("data", {}).get("episodes"),
            "frame_pretraining": pretraining[0] if pretraining else None,
            "eval": {"task": task, **{k: summary.get(k) for k in ("episodes", "successes", "success_rate", "ci_low",
                                                                  "ci_high", "mean_progress")}}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "gpu_check")
    parser.add_argument("--demos", type=int, default=20)
    parser.add_argument("--resets", type=int, default=2000, help="rendered scenes for the frame encoder")
    parser.add_argument("--pretrain-steps", type=int, default=150, help="frame-encoder pretraining steps (on train.device)")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--skip-training", action="store_true", help="run the tests only")
    args = parser.parse_args(argv)

    os.environ.setdefault("MUJOCO_GL", "egl")  # before mujoco is imported
    refusal = preflight()
    if refusal is not None:
        code, message = refusal
        print(message, file=sys.stdout if code == 0 else sys.stderr)
        return code
    t0 = time.perf_counter()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), **environment()}
    print(f"gpu-check: {report['device']['name']}, torch {report['torch']} (CUDA {report['cuda']}); "
          f"logs in {out}", flush=True)
    report["tests"] = run_tests(out)
    tests = report["tests"]
    print(f"gpu-check: tests {tests['passed']} passed, {tests['failed']} failed, {tests['errors']} errors, "
          f"{tests['skipped']} skipped ({tests['time_s']} s)", flush=True)
    if not args.skip_training:
        report["training"] = run_training(out, args)
        training = report["training"]
        if training["returncode"] == 0 and "eval" in training:
            e = training["eval"]
            print(f"gpu-check: training {training['steps']} steps at {training['steps_per_s']} steps/s, "
                  f"{e['task']} success {e['successes']}/{e['episodes']} ({training['time_s']} s)", flush=True)
        else:
            print(f"gpu-check: training failed (exit {training['returncode']}); see {training['log']}", flush=True)
    ok = (tests["returncode"] == 0 and tests["failed"] == 0 and tests["errors"] == 0
          and (args.skip_training or (report["training"]["returncode"] == 0 and "eval" in report["training"])))
    report.update(status="passed" if ok else "failed", wall_time_s=round(time.perf_counter() - t0, 1))
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"gpu-check: {report['status']} in {report['wall_time_s']} s; report {out / 'report.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
