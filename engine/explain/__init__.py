"""Explanations: Captum attributions for one sample, with a PNG rendering."""

from engine.explain.methods import METHODS, ExplainError, Explanation, explain
from engine.explain.render import render_png

__all__ = ["METHODS", "ExplainError", "Explanation", "explain", "render_png"]
