"""Runs app: training runs, their events and metric points, checkpoints, explanations, exports."""
