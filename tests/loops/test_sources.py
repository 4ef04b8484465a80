"""Composing a round's episodes from named sources with weights."""

import pytest

from robot_learn.loops.methods import make_loop_config
from robot_learn.loops.sources import check_sources, split_episodes


def test_episodes_split_by_weight_and_sum_exactly():
    assert split_episodes(10, {"hitl": 1.0, "autonomous": 1.0}) == {"hitl": 5, "autonomous": 5}
    assert split_episodes(10, {"hitl": 3.0, "autonomous": 1.0}) == {"hitl": 8, "autonomous": 2}
    assert split_episodes(3, {"hitl": 1.0, "autonomous": 0.0}) == {"hitl": 3, "autonomous": 0}
    assert sum(split_episodes(7, {"hitl": 1.0, "autonomous": 1.0}).values()) == 7


def test_a_list_of_sources_takes_one_weight_each_or_none_for_equal_weights():
    assert check_sources(["hitl", "autonomous"]) == {"hitl": 1.0, "autonomous": 1.0}
    assert make_loop_config("hgdagger", sources=["hitl", "autonomous"], source_weights=[3, 1]).sources == {
        "hitl": 3.0, "autonomous": 1.0}
    with pytest.raises(ValueError, match=r"source_weights has 1 weights for 2 sources \['hitl', 'autonomous'\]"):
        make_loop_config("hgdagger", sources=["hitl", "autonomous"], source_weights=[1])


@pytest.mark.parametrize("sources, message", [
    ({"hitl": 1, "dagger": 1}, "unknown source 'dagger'; valid sources: hitl, autonomous"),
    ({"hitl": -1}, "source 'hitl' has weight -1.0; weights must be >= 0"),
    ({"hitl": 0, "autonomous": 0}, r"source weights are all zero \(\{'hitl': 0.0, 'autonomous': 0.0\}\); give at "
                                   r"least one of hitl, autonomous, teleop, guided, reversed, imagined a positive weight"),
    ({}, "source weights are all zero"),
])
def test_bad_sources_are_clear_errors(sources, message):
    with pytest.raises(ValueError, match=message):
        make_loop_config("hgdagger", sources=sources)


def test_bad_train_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown train_mode 'finetune'; valid: continue, retrain"):
        make_loop_config("recap", train_mode="finetune")
