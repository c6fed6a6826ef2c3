"""Explanations of trained example models, as the browser and the CLI receive them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
from PIL import Image

from engine.build import build
from engine.data import DataRecipe, load_dataset
from engine.explain import METHODS, ExplainError, explain
from engine.train import train

SPECS = Path(__file__).resolve().parents[3] / "examples" / "specs"


def _trained(name: str, data: str, cfg: dict, *, relu_as: str | None = None):
    splits = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": data}}))
    spec = json.loads((SPECS / f"{name}.json").read_text())
    if relu_as is not None:
        spec["nodes"] = [{**n, "op": relu_as} if n["op"] == "ReLU" else n for n in spec["nodes"]]
    return train(spec, splits, cfg).model.eval(), splits


@pytest.fixture(scope="module")
def digits_cnn():
    return _trained("digits_cnn", "digits", {"epochs": 2, "optimizer": {"lr": 0.01}})


@pytest.fixture(scope="module")
def digits_cnn_gelu():
    """The example CNN with GELU for ReLU: a smooth path integrand, as the iris MLP has.

    With ReLU (and max-pooling) the integrand of Integrated Gradients is a step function along
    the path, so the error of a 50-point quadrature falls only as 1/n_steps and lands anywhere
    in 0.001-0.013 depending on the trained weights -- which depend on the number of BLAS
    threads (the order of float sums). GELU brings it to ~1e-3 on any machine.
    """
    return _trained("digits_cnn", "digits", {"epochs": 2, "optimizer": {"lr": 0.01}}, relu_as="GELU")


@pytest.fixture(scope="module")
def iris_mlp():
    return _trained("iris_mlp", "iris", {"epochs": 20, "batch_size": 16, "optimizer": {"lr": 0.01}})


def _png_size(data: bytes) -> tuple[int, int]:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    return image.size


@pytest.mark.parametrize("fixture", ["digits_cnn_gelu", "iris_mlp"])
def test_integrated_gradients_completeness_within_delta(fixture, request):
    model, splits = request.getfixturevalue(fixture)
    for i in range(len(splits.test.x) if fixture == "iris_mlp" else 4):
        x = splits.test.x[i]
        # tolerance=None: exactly 50 steps, no refinement; the delta must already be small.
        exp = explain(model, x, method="integrated_gradients", n_steps=50, tolerance=None)
        assert exp.attributions.shape == x.shape
        with torch.no_grad():
            gap = model(x[None])[0, exp.target] - model(torch.zeros_like(x)[None])[0, exp.target]
        assert exp.n_steps == 50
        assert abs(exp.delta) < 1e-2
        assert abs(float(exp.attributions.sum()) - float(gap)) <= abs(exp.delta) + 1e-5


def test_integrated_gradients_refines_the_relu_cnn_until_within_tolerance(digits_cnn):
    """ReLU kinks: 50 steps may not be enough; explain() doubles them until the delta is small."""
    model, splits = digits_cnn
    for i in range(4):
        x = splits.test.x[i]
        exp = explain(model, x, method="integrated_gradients", n_steps=50)  # tolerance 1e-2
        with torch.no_grad():
            gap = model(x[None])[0, exp.target] - model(torch.zeros_like(x)[None])[0, exp.target]
        assert exp.n_steps >= 50
        assert abs(exp.delta) < 1e-2
        assert abs(float(exp.attributions.sum()) - float(gap)) <= abs(exp.delta) + 1e-5


def test_integrated_gradients_keeps_the_given_steps_without_tolerance(iris_mlp):
    model, splits = iris_mlp
    x = splits.test.x[0]
    exp = explain(model, x, method="integrated_gradients", n_steps=50, tolerance=None)
    assert exp.n_steps == 50 and exp.to_json()["n_steps"] == 50
    with torch.no_grad():
        gap = model(x[None])[0, exp.target] - model(torch.zeros_like(x)[None])[0, exp.target]
    assert abs(float(exp.attributions.sum()) - float(gap)) <= exp.delta + 1e-5


@pytest.mark.parametrize("method", [m["name"] for m in METHODS])
def test_every_method_on_the_digits_cnn(digits_cnn, method):
    model, splits = digits_cnn
    x = splits.test.x[0]
    exp = explain(model, x, method=method, layer="conv2" if method == "grad_cam" else None,
                  display=splits.info.denormalize(x[None])[0])
    assert exp.attributions.shape == (1, 8, 8)
    assert torch.isfinite(exp.attributions).all()
    assert exp.prediction == int(model(x[None]).argmax())
    assert exp.target == exp.prediction
    assert len(exp.probabilities) == 10 and abs(sum(exp.probabilities) - 1) < 1e-5
    has_delta = next(m["has_delta"] for m in METHODS if m["name"] == method)
    assert (exp.delta is not None) == has_delta
    assert _png_size(exp.png)[0] > 300
    doc = exp.to_json()
    assert doc["method"] == method and doc["shape"] == [1, 8, 8]
    assert json.loads(json.dumps(doc))["png_base64"]


def test_grad_cam_is_non_negative_and_follows_the_chosen_layer(digits_cnn):
    model, splits = digits_cnn
    x = splits.test.x[1]
    first = explain(model, x, method="grad_cam", layer="conv1")
    default = explain(model, x, method="grad_cam")
    assert first.layer == "conv1" and default.layer == "conv2"  # the last conv by default
    assert (first.attributions >= 0).all()


def test_grad_cam_on_a_non_conv_node_names_it(digits_cnn):
    model, splits = digits_cnn
    with pytest.raises(ExplainError, match="grad_cam needs a convolution node; node 'bn1' is a BatchNorm2d"):
        explain(model, splits.test.x[0], method="grad_cam", layer="bn1")
    with pytest.raises(ExplainError, match="no node 'nope'"):
        explain(model, splits.test.x[0], method="grad_cam", layer="nope")


def test_grad_cam_without_any_conv_says_so(iris_mlp):
    model, splits = iris_mlp
    with pytest.raises(ExplainError, match="this model has none"):
        explain(model, splits.test.x[0], method="grad_cam")


def test_tabular_explanation_uses_feature_names_and_bars(iris_mlp):
    model, splits = iris_mlp
    names = splits.info.feature_names
    exp = explain(model, splits.test.x[0], method="occlusion", feature_names=names, target=2)
    assert exp.target == 2 and exp.attributions.shape == (4,)
    assert exp.to_json()["feature_names"] == names
    width, height = _png_size(exp.png)
    assert width > height  # a bar chart, not a square heat map
    with pytest.raises(ExplainError, match="feature_names has 2 names but the input has 4 values"):
        explain(model, splits.test.x[0], method="saliency", feature_names=["a", "b"])


def test_bad_requests_are_named(iris_mlp):
    model, splits = iris_mlp
    x = splits.test.x[0]
    with pytest.raises(ExplainError, match="unknown method 'lime'"):
        explain(model, x, method="lime")
    with pytest.raises(ExplainError, match="target 3 is out of range: the model has 3 outputs"):
        explain(model, x, method="saliency", target=3)
    with pytest.raises(ExplainError, match="float input"):
        explain(model, torch.zeros(4, dtype=torch.long), method="saliency")


def test_regression_explains_the_single_output():
    splits = load_dataset(DataRecipe.model_validate({"source": {"kind": "builtin", "name": "diabetes"}}))
    model = build(json.loads((SPECS / "diabetes_mlp.json").read_text())).eval()
    exp = explain(model, splits.test.x[0], method="integrated_gradients",
                  feature_names=splits.info.feature_names)
    assert exp.target == 0 and exp.probabilities is None
    with torch.no_grad():
        assert exp.prediction == pytest.approx(float(model(splits.test.x[:1])[0, 0]))
    assert abs(exp.delta) < 1e-2


def test_a_batched_sample_keeps_its_batch_axis(digits_cnn):
    model, splits = digits_cnn
    exp = explain(model, splits.test.x[:1], method="saliency")
    assert exp.attributions.shape == (1, 1, 8, 8)


def test_METHODS_lists_labels_for_the_browser():
    assert [m["name"] for m in METHODS] == [
        "integrated_gradients", "saliency", "deeplift", "gradient_shap", "occlusion", "grad_cam"
    ]
    assert all(m["label"] and m["help"] for m in METHODS)
    assert [m["name"] for m in METHODS if m["needs_layer"]] == ["grad_cam"]
