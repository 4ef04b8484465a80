"""Nothing outside ``robot_learn/cli/`` and the CLI's own tests imports ``robot_learn.cli``:
library code, benchmarks and the other tests call the library, which the CLI wraps."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("robot_learn", "envs", "hardware", "benchmarks", "tests")
ALLOWED = (ROOT / "robot_learn" / "cli", ROOT / "tests" / "cli")


def cli_imports(path: Path) -> list[str]:
    """The ``robot_learn.cli`` modules that ``path`` imports (at any depth of the file)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [n for n in names if n == "robot_learn.cli" or n.startswith("robot_learn.cli.")]
    return found


def test_cli_imports_are_detected(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from robot_learn.cli.hw import main\n    import robot_learn.cli\n")
    assert cli_imports(probe) == ["robot_learn.cli.hw", "robot_learn.cli"]


def test_nothing_outside_the_cli_imports_it():
    offenders = {}
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if any(path.is_relative_to(a) for a in ALLOWED):
                continue
            if found := cli_imports(path):
                offenders[str(path.relative_to(ROOT))] = found
    assert not offenders, offenders
