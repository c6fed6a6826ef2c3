"""What a trained run answers: predictions, evaluations, explanations, exports, imported weights."""
