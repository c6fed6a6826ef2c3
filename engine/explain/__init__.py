"""Explanations: Captum attributions for one sample, with a PNG rendering."""

from engine.explain.methods import METHODS, ExplainError, Explanation, explain
from engine.explain.render import render_png
from engine.explain.sample import explain_sample, sample_tensor

__all__ = ["METHODS", "ExplainError", "Explanation", "explain", "explain_sample", "render_png", "sample_tensor"]
