"""The ranking benchmarks' own logic: ``wm_ranking_power.py`` (the correlation a perfect world model
would reach, given the episode counts) and ``bench_wm_ranking.py --merge`` (one report over runs made apart,
or with ``--ensemble`` over the same policies in several world models)."""

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run(*args: str, script: str = "wm_ranking_power.py") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                          timeout=120)


def rows(stdout: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in stdout.splitlines()
            if line.startswith("| ") and line[2].isdigit()]


def test_more_episodes_give_a_perfect_model_more_power():
    proc = run("--rates", "0", "2", "8", "22", "32", "18", "12", "10", "15", "--designs", "40:20", "2000:2000",
               "--repeats", "1000", "--observed", "0.70", "0.58")
    assert proc.returncode == 0, proc.stderr
    few, many = rows(proc.stdout)
    assert float(few[2]) < 0.6 < 0.99 < float(many[2])  # P(Pearson >= 0.8): a coin flip, then certain
    assert float(many[1].split()[0]) > 0.95
    assert float(few[5]) > 0.05 > float(many[5])  # 0.70 / 0.58 is ordinary at 40:20, never at 2000:2000


def test_bad_input_is_one_line_naming_it():
    proc = run("--rates", "0", "2", "8", "--designs", "40:x")
    assert proc.returncode == 2 and "design '40:x'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("--rates", "0", "120", "8")
    assert proc.returncode == 2 and "--rates" in proc.stderr and "Traceback" not in proc.stderr


def ranking_rows(rates: list[tuple[float, float]], wm_episodes: int = 100, scorer: str = "nearest") -> list[dict]:
    return [{"policy": f"p{i}", "sim": sim, "sim_episodes": 200, "wm_episodes": wm_episodes, f"wm:{scorer}": wm,
             f"wm:{scorer}:progress": wm / 2, f"wm:{scorer}:s": 1.0} for i, (sim, wm) in enumerate(rates)]


def test_merge_reports_over_the_runs_together(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(ranking_rows([(0.1, 0.2), (0.3, 0.4)])))
    b.write_text(json.dumps(ranking_rows([(0.5, 0.6), (0.2, 0.1)])))
    proc = run("--merge", str(a), str(b), script="bench_wm_ranking.py")
    assert proc.returncode == 0, proc.stderr
    assert "4 policies from 2 runs, 200 MuJoCo episodes and 100 imagined episodes each" in proc.stdout
    assert "scorer nearest: success Pearson 0.90, Spearman 0.80" in proc.stdout  # over all four, not per run


def test_merge_refuses_runs_of_another_design(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(ranking_rows([(0.1, 0.2), (0.3, 0.4)])))
    b.write_text(json.dumps(ranking_rows([(0.5, 0.6), (0.2, 0.1)], wm_episodes=40)))
    proc = run("--merge", str(a), str(b), script="bench_wm_ranking.py")
    assert proc.returncode == 1 and "the runs differ" in proc.stderr and "Traceback" not in proc.stderr
    b.write_text(json.dumps([dict(row, wm_start="sim") for row in ranking_rows([(0.5, 0.6), (0.2, 0.1)])]))
    proc = run("--merge", str(a), str(b), script="bench_wm_ranking.py")  # imagined from other starts
    assert proc.returncode == 1 and "the runs differ" in proc.stderr and "'sim'" in proc.stderr
    b.write_text("[]")
    proc = run("--merge", str(a), str(b), script="bench_wm_ranking.py")
    assert proc.returncode == 1 and f"--merge {b}: no policy rows" in proc.stderr and "Traceback" not in proc.stderr


def test_imagined_rates_give_an_interval_around_the_measured_correlation():
    proc = run("--rates", "0", "10", "20", "30", "--imagined", "5", "30", "20", "60", "--designs", "200:100",
               "--repeats", "1000")
    assert proc.returncode == 0, proc.stderr
    assert "measured: Pearson 0.86, Spearman 0.80" in proc.stdout
    (row,) = rows(proc.stdout)
    pearson, low, high = (float(x) for x in row[1].replace("[", "").replace("]", "").replace(",", "").split())
    assert low < pearson < high and high - low > 0.1  # four policies at 100 episodes: a wide interval
    proc = run("--rates", "0", "10", "20", "--imagined", "5", "30")
    assert proc.returncode == 2 and "--imagined: need 3 rates" in proc.stderr and "Traceback" not in proc.stderr


def test_ensemble_ranks_by_the_world_models_mean(tmp_path):
    sim = [0.1, 0.2, 0.3, 0.4]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(ranking_rows(list(zip(sim, [0.3, 0.1, 0.5, 0.6])), scorer="wm_a/judge")))
    b.write_text(json.dumps(ranking_rows(list(zip(sim, [0.1, 0.5, 0.3, 0.8])), scorer="wm_b/judge")))
    for one in (a, b):  # each world model alone misorders a pair; their mean (0.2, 0.3, 0.4, 0.7) does not
        assert "Spearman 0.80" in run("--merge", str(one), script="bench_wm_ranking.py").stdout
    proc = run("--merge", str(a), str(b), "--ensemble", script="bench_wm_ranking.py")
    assert proc.returncode == 0, proc.stderr
    assert "4 policies from 2 runs, 200 MuJoCo episodes and 2 x 100 imagined episodes each" in proc.stdout
    assert "| p3 | 40% | 70% |" in proc.stdout
    assert "scorer ensemble of 2: success Pearson 0.96, Spearman 1.00" in proc.stdout


def test_ensemble_refuses_runs_that_do_not_pair_up(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(ranking_rows([(0.1, 0.2), (0.3, 0.4)], scorer="wm_a/judge")))
    b.write_text(json.dumps(ranking_rows([(0.1, 0.2)], scorer="wm_b/judge")))
    proc = run("--merge", str(a), str(b), "--ensemble", script="bench_wm_ranking.py")
    assert proc.returncode == 1 and "policy p1 has imagined rates from ['wm_a/judge']" in proc.stderr
    proc = run("--merge", str(a), "--ensemble", script="bench_wm_ranking.py")
    assert proc.returncode == 1 and "an ensemble needs runs of the same policies in at least two" in proc.stderr
    b.write_text(json.dumps(ranking_rows([(0.2, 0.2), (0.3, 0.4)], scorer="wm_b/judge")))
    proc = run("--merge", str(a), str(b), "--ensemble", script="bench_wm_ranking.py")
    assert proc.returncode == 1 and "policy p0 has different MuJoCo rates [0.1, 0.2]" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run("--ensemble", "--world-model", "w", "--policies", "p", script="bench_wm_ranking.py")
    assert proc.returncode == 2 and "--ensemble works on earlier runs' files" in proc.stderr
