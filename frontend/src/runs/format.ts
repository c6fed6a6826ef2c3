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

/**
 * An axis' tick labels with the digits their spacing needs, the same for every tick:
 * [0, 0.0005, 0.001] reads "0.0000", "0.0005", "0.0010" (uPlot's default rounds to 3 decimals,
 * so a learning rate axis read "0.002, 0.002, 0.001"); tiny or huge values in exponent form.
 */
export function formatTicks(splits: number[]): string[] {
  const gaps = splits
    .slice(1)
    .map((v, i) => Math.abs(v - splits[i]))
    .filter((gap) => gap > 0 && Number.isFinite(gap));
  if (gaps.length === 0) return splits.map(formatMetric);
  const step = Math.min(...gaps);
  const top = Math.max(...splits.map((v) => Math.abs(v)));
  if (top >= 1e6 || top < 1e-3) {
    const digits = Math.min(6, Math.max(0, Math.round(Math.log10(top / step))));
    return splits.map((v) => (v === 0 ? "0" : v.toExponential(digits)));
  }
  const decimals = Math.min(10, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9)));
  return splits.map((v) => v.toFixed(decimals));
}
