"""explain_sample: a test-split row by index or raw values typed by the user, as runs.explain asks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.build import build
from engine.data import DataRecipe, load_dataset
from engine.explain import ExplainError, explain, explain_sample, sample_tensor

SPECS = Path(__file__).resolve().parents[3] / "examples" / "specs"


@pytest.fixture(scope="module")
def iris():
    """An untrained iris MLP (attributions need no training) and the iris splits."""
    splits = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "iris"}}))
    model = build(json.loads((SPECS / "iris_mlp.json").read_text()), seed=0).eval()
    return model, splits


def test_an_index_explains_that_row_of_the_test_split(iris):
    model, splits = iris
    got = explain_sample(model, {"index": 3}, info=splits.info, test_x=splits.test.x, method="saliency")
    want = explain(model, splits.test.x[3], method="saliency")
    assert torch.equal(got.attributions, want.attributions)
    assert got.feature_names == splits.info.feature_names and got.png[:4] == b"\x89PNG"


def test_raw_input_is_normalised_like_the_training_data(iris):
    model, splits = iris
    raw = splits.info.denormalize(splits.test.x[:1])[0]  # what the user sees and types
    by_value = explain_sample(model, {"input": raw.tolist()}, info=splits.info, method="saliency")
    by_index = explain_sample(model, {"index": 0}, info=splits.info, test_x=splits.test.x, method="saliency")
    assert torch.allclose(by_value.attributions, by_index.attributions, atol=1e-5)
    assert by_value.prediction == by_index.prediction
    assert torch.allclose(sample_tensor({"input": raw.tolist()}, info=splits.info), splits.test.x[0], atol=1e-5)


def test_the_method_target_and_task_are_passed_on(iris):
    model, splits = iris
    exp = explain_sample(model, {"index": 0}, info=splits.info, test_x=splits.test.x,
                         method="integrated_gradients", target=2)
    assert exp.method == "integrated_gradients" and exp.target == 2 and exp.delta is not None
    assert len(exp.probabilities) == 3  # classification, from the dataset's task


def test_a_row_past_the_test_split_is_named(iris):
    model, splits = iris
    rows = len(splits.test.x)
    with pytest.raises(ExplainError, match=f"index {rows} is out of range: the test split has {rows} rows"):
        explain_sample(model, {"index": rows}, info=splits.info, test_x=splits.test.x)


def test_input_of_the_wrong_shape_is_named(iris):
    model, splits = iris
    with pytest.raises(ExplainError, match=r"input has shape \[3\], the model needs \[4\]"):
        explain_sample(model, {"input": [1.0, 2.0, 3.0]}, info=splits.info)
    assert issubclass(ExplainError, ValueError)  # the task records str(exc) for the user
