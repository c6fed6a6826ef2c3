"""The metric store: runs' metric points packed per 64 steps, their block summaries, and reads of them."""
