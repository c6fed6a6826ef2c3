"""`python -m engine import`: trace an existing `nn.Module` with torch.fx and write a graph spec.

Runs the user's Python on the user's own machine (the CLI); the server never does. Kept light:
the converter (`engine.import_fx.convert`, torch.fx) is imported only when the command runs.
"""
