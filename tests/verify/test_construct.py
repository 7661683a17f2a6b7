"""Constructors verify builds (issue 20): a dict config read by key, answered by role; --init lists and torch dtypes."""

import json
import os

import pytest
import torch
import typer
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.cli.options import parse_pairs, parse_value
from shapecheck.errors import UsageError
from shapecheck.target import load_target, map_arguments
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

BY_ROLE = os.path.join(HERE, "construct", "by_role.py")
RUN = CliRunner()


def _reference(cls: str, **options):
    report = verify(load_target(f"{BY_ROLE}:{cls}"), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, "properties": ("reference",), **options}))
    return report, report.results[0]


def test_a_dict_config_is_answered_by_role_and_the_reference_runs():
    report, found = _reference("DictConfig")
    assert found.status == "passed", found.message
    assert "config: attributes answered by role" in report.construction, report.construction
    _, bug = _reference("DictConfigBug")
    assert bug.status == "failed" and "1/√d_model" in bug.message


def test_init_lists_reach_the_constructor_and_dtype_names_become_torch_dtypes():
    assert parse_pairs("depths=[2,2],heads=[2, 4],dtype=float32", parse_value) == {"depths": [2, 2], "heads": [2, 4], "dtype": "float32"}
    construction = map_arguments(load_target(f"{BY_ROLE}:ListsAndDtype"), {"d_model": 4, "heads": 2}, keep_defaults=False,
                                 init={"depths": [2, 2], "dtype": "float32"})
    assert construction.arguments["depths"] == [2, 2] and construction.arguments["dtype"] is torch.float32
    _, found = _reference("ListsAndDtype", init={"depths": [2, 2], "dtype": "float32"})
    assert found.status == "passed", found.message
    _, bug = _reference("ListsAndDtypeBug", init={"depths": [2, 2], "dtype": "torch.float32"})
    assert bug.status == "failed"


def test_a_name_that_is_no_dtype_is_one_line_naming_the_choices():
    with pytest.raises(UsageError, match="not a torch dtype"):
        map_arguments(load_target(f"{BY_ROLE}:ListsAndDtype"), {"d_model": 4, "heads": 2}, keep_defaults=False,
                      init={"depths": [1], "dtype": "float99"})
    with pytest.raises(typer.BadParameter, match="not name=value"):
        parse_pairs("=[2],b=1", parse_value)


def test_the_command_line_takes_lists_and_dtypes():
    result = RUN.invoke(app, ["verify", f"{BY_ROLE}:ListsAndDtype", "--init", "depths=[2,2],dtype=float32", "--format", "json",
                              "--max-examples", "3", "--property", "reference"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["properties"][0]["status"] == "passed"


STAGE = os.path.join(HERE, "construct", "stage.py")


def _stage(cls: str, heads: list, **options):
    return verify(load_target(f"{STAGE}:{cls}"), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, "init": {"num_heads": heads}, **options}))


def test_an_init_list_of_head_counts_is_a_pattern_the_drawn_heads_drive():
    report = _stage("StageBug", [1, 1])  # as given, one head per block: the merge bug cannot show
    failed = [r for r in report.results if r.status == "failed"]
    assert failed and failed[0].counterexample["heads"] >= 2, [(r.name, r.counterexample) for r in failed]
    assert "built as [h, h] for each drawn head count h" in " ".join(report.notes)
    assert _stage("Stage", [1, 1], max_examples=min(EXAMPLES, 8)).passed


def test_a_pattern_of_growing_head_counts_draws_head_sizes_that_fit_every_entry():
    report = _stage("Stage", [1, 3], properties=("output_shape", "reference", "permutation"))
    assert report.passed and "multiples of 3" in " ".join(report.notes), report.notes


def test_a_list_that_is_no_pattern_is_used_as_given_and_says_so():
    from shapecheck.testing.subject import head_lists

    driven, notes = head_lists({"num_heads": [2, 3], "depths": [2, 2]})
    assert driven == {} and "used as given" in notes[0] and len(notes) == 1  # depths is no head count


def test_a_head_count_given_to_a_list_of_heads_is_not_dropped_silently():
    construction = map_arguments(load_target(f"{STAGE}:StageWithDefaults"), {"d_model": 12, "heads": 3}, keep_defaults=True,
                                 explicit=("d_model", "heads"))
    assert construction.arguments["num_heads"] == [2, 2]
    assert "heads=3 not applied" in construction.describe() and "--init 'num_heads=[...]'" in construction.describe()
    kept = map_arguments(load_target(f"{STAGE}:StageWithDefaults"), {"d_model": 12}, keep_defaults=True, explicit=("d_model",))
    assert "num_heads" not in kept.arguments  # no head count given: nothing to say
