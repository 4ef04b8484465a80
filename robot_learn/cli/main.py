"""``robot-learn`` console entry point: dispatches the first argument to a subcommand.

Subcommand modules are imported only when chosen, so ``robot-learn --help`` stays
fast (no torch or MuJoCo import). Errors follow one rule (see
:mod:`robot_learn.cli.errors`): a user's mistake is one line and exit status 2;
``--debug`` anywhere on the command line adds the traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

from robot_learn.cli.errors import run_command, strip_debug_flag

# name -> (module, one-line description); each module exposes ``main(argv) -> int``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "train": ("robot_learn.cli.train",
              "collect demos if missing, train a policy, evaluate it, write a report"),
    "eval": ("robot_learn.cli.evaluate",
             "evaluate a saved policy on held-out seeds and write a report"),
    "collect": ("robot_learn.cli.collect", "record scripted expert demos into an episode store"),
    "suite": ("robot_learn.cli.suite", "train and evaluate on a list of tasks (tasks=[A,B,...]); one table "
              "of success, Wilson intervals and times"),
    "inspect": ("robot_learn.cli.inspect_store", "print a summary of an episode store"),
    "render-episode": ("robot_learn.cli.render_episode", "write one stored episode to mp4"),
    "improve": ("robot_learn.cli.improve", "improvement rounds: collect, curate, fine-tune, evaluate "
                "(loop=hgdagger|help_curated|recap|autonomous)"),
    "wm": ("robot_learn.cli.wm", "video world models: wm train | wm eval (fidelity vs copy-last) | "
           "wm rollout (a policy in the model)"),
    "hitl": ("robot_learn.cli.hitl", "run a HITL session: a policy drives, an operator takes over"),
    "fleet": ("robot_learn.cli.fleet", "an SOP-style fleet on Ray: robot actors stream episodes to one writer, "
              "a learner trains and publishes weights (actors=N, address=...)"),
    "console": ("robot_learn.cli.console", "serve the browser console for operators supervising "
                "simulated HITL sessions"),
    "hw": ("robot_learn.cli.hw", "real arms: find-port, scan, calibrate, teleop, record, "
           "replay, run-policy"),
    "import-lerobot": ("robot_learn.cli.import_lerobot",
                       "read a LeRobotDataset v3 (root or Hub id) into an episode store"),
    "export-lerobot": ("robot_learn.cli.export_lerobot",
                       "write an episode store as a LeRobotDataset v3 (with HITL fields)"),
}


def usage() -> str:
    """The top-level help text listing every subcommand."""
    width = max(len(n) for n in SUBCOMMANDS)
    lines = ["usage: robot-learn <command> [args...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {desc}" for name, (_, desc) in SUBCOMMANDS.items()]
    lines += ["", "Hydra commands (train, eval, collect) take key=value overrides, e.g.",
              "  robot-learn train task=stack policy=diffusion_state train=fast",
              "and '--help' / '--cfg job' like any Hydra app.",
              "'--debug' anywhere on the command line shows the traceback of an error.",
              "Run 'robot-learn <command> --help' for a command's options."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``robot-learn``; returns the process exit status."""
    args = strip_debug_flag(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        print(f"robot-learn: unknown command '{name}'; valid commands: "
              f"{', '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    # Each subcommand applies the rule itself (tests call them directly); this is the
    # backstop for anything raised outside it, e.g. while importing.
    return run_command(f"robot-learn {name}",
                       lambda a: importlib.import_module(SUBCOMMANDS[name][0]).main(a), rest)


if __name__ == "__main__":
    sys.exit(main())
