import subprocess
import sys


def test_policies_import_no_simulator_or_higher_layer():
    code = (
        "import sys, robot_learn.policies\n"
        "bad = [m for m in sys.modules if m.split('.')[:2] in (['robot_learn','envs'], ['robot_learn','training'],"
        " ['robot_learn','evaluation'], ['robot_learn','cli'], ['robot_learn','loops'], ['robot_learn','hardware'])"
        " or m == 'mujoco' or m == 'gymnasium']\n"
        "print(bad); assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
