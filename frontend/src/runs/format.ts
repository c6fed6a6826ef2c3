// How run numbers read: metric values, durations, progress.

/** A metric value with sensible digits ("0.9612", "1.2e-5", "–"). */
export function formatMetric(v: unknown): string {
  if (typeof v !== "number" || !Number.isFinite(v)) return "–";
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  // Large values (samples per second, a regression's loss) need no four decimals.
  return v.toFixed(a >= 1000 ? 1 : 4);
}

/** Seconds as "42 s", "3 min 5 s", "1 h 2 min". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
