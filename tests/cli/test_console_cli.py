"""``robot-learn console``: bad settings are one line (exit 2) and create no store
(Hydra's own run folder aside)."""

import socket

import pytest

from robot_learn.cli.main import main


@pytest.mark.parametrize("override, words", [
    ("sessions=0", ["sessions", ">= 1"]),
    ("sessions=two", ["sessions", "integer", "'two'"]),
    ("port=70000", ["port", "65535"]),
    ("host=no.such.host.invalid", ["host", "no.such.host.invalid"]),
    ("rate_hz=0", ["rate_hz"]),
    ("stand_in.freeze_fraction=1.5", ["freeze_fraction", "[0, 1]"]),
    ("stand_in.freeze_after=[30,10]", ["stand_in.freeze_after", "low <= high"]),
    ("operators=[]", ["operators", "non-empty"]),
    ("labels=[good,good]", ["labels", "distinct"]),
    ("task=stak", ["stak", "stack"]),
    ("policy_dir=/no/such/policy", ["/no/such/policy"]),
])
def test_bad_settings_are_one_line_and_create_no_store(override, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["console", override]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robot-learn console: error: ") and "\n" not in err, err
    assert all(w in err for w in words), err
    assert not list(tmp_path.rglob("*.zarr"))


def test_a_port_in_use_is_one_line_and_creates_no_store(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["console", f"port={port}"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"port {port}" in err and "\n" not in err, err
    assert not list(tmp_path.rglob("*.zarr"))
