"""Tables of the metric store (webapp/metrics/store.py): a run's points packed per 64 steps and
their block summaries.

The tables were made by the runs app and keep their names (runs_metricblock, runs_metricchunk):
the models moved here without a row being rewritten (migrations/0001_initial.py).
"""

from __future__ import annotations

from django.db import models


class MetricBlock(models.Model):
    """Summary of one metric's points in one step-aligned block (webapp/metrics/store.py).

    Written with the points, in events_record's transaction: block `block` of level `level`
    holds steps block*size .. (block+1)*size-1, size = LEVELS[level]. min/max are of the finite
    values (null when the block has none); first/last are points.
    """

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="metric_blocks")
    key = models.CharField(max_length=100)
    level = models.PositiveSmallIntegerField()
    block = models.BigIntegerField()
    n = models.IntegerField()
    first_step = models.BigIntegerField()
    first_epoch = models.FloatField()
    first_value = models.FloatField(null=True)
    last_step = models.BigIntegerField()
    last_epoch = models.FloatField()
    last_value = models.FloatField(null=True)
    min_step = models.BigIntegerField(null=True)
    min_epoch = models.FloatField(null=True)
    min_value = models.FloatField(null=True)
    max_step = models.BigIntegerField(null=True)
    max_epoch = models.FloatField(null=True)
    max_value = models.FloatField(null=True)

    class Meta:
        db_table = "runs_metricblock"
        constraints = [
            models.UniqueConstraint(fields=["run", "key", "level", "block"], name="metricblock_unique_block")
        ]

    def __str__(self) -> str:
        return f"{self.key}@L{self.level}:{self.block} ({self.n} points)"


class MetricChunk(models.Model):
    """The record of one metric's points in one level-0 block (64 steps): a redone step
    overwrites its point (webapp/metrics/store.py; the replaced point is kept as a RunEvent).

    Steps, epochs, values (NaN for a value that was NaN or infinite) and the seqs of the events
    that wrote them, packed as little-endian int64 / float64 arrays in step order, with their
    lowest and highest seq (the stream's replay). Apart from MetricBlock so that reading
    summaries never reads points.
    """

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="metric_chunks")
    key = models.CharField(max_length=100)
    block = models.BigIntegerField()
    steps = models.BinaryField()
    epochs = models.BinaryField()
    values = models.BinaryField()
    seqs = models.BinaryField()
    min_seq = models.BigIntegerField()
    max_seq = models.BigIntegerField()

    class Meta:
        db_table = "runs_metricchunk"
        constraints = [
            models.UniqueConstraint(fields=["run", "key", "block"], name="metricchunk_unique_block")
        ]
        indexes = [models.Index(fields=["run", "max_seq"], name="metricchunk_run_seq")]

    def __str__(self) -> str:
        return f"{self.key}@{self.block} (seqs {self.min_seq}..{self.max_seq})"
