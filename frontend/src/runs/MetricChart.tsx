// One live line chart (uPlot) of some metric series against the training step.
import { memo, useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatMetric } from "./format";
import type { SeriesSet } from "./series";

const COLORS = ["#2f6fdd", "#e0662b", "#2e7d32", "#8e44ad", "#c62828", "#00838f"];
const HEIGHT = 220;

export interface MetricChartProps {
  title: string;
  /** Name used in test ids (`chart-<name>`). */
  name: string;
  series: SeriesSet;
  /** Bumped whenever `series` changed (SeriesSet.version). */
  version: number;
  keys: string[];
}

export const MetricChart = memo(function MetricChart({ title, name, series, version, keys }: MetricChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const frame = useRef<number | null>(null);
  const keyList = keys.join(",");

  // A new set of keys (val/loss appears after the first epoch) needs a new chart.
  useEffect(() => {
    const el = box.current;
    if (!el || keys.length === 0) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: HEIGHT,
      scales: { x: { time: false } },
      axes: [{ label: "step" }, { size: 56 }],
      series: [{ label: "step" }, ...keys.map((k, i) => ({ label: k, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true, points: { show: false } }))],
      legend: { show: true },
    };
    const u = new uPlot(opts, series.aligned(keys) as uPlot.AlignedData, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [keyList, series]);

  // New points: redraw at most once a frame.
  useEffect(() => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      plot.current?.setData(series.aligned(keys) as uPlot.AlignedData);
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, keyList, series]);

  useEffect(() => () => {
    if (frame.current !== null) cancelAnimationFrame(frame.current);
  }, []);

  const counts = keys.map((k) => {
    const s = series.get(k);
    return { key: k, n: series.count(k), last: s && s.values.length ? s.values[s.values.length - 1] : null };
  });
  const described = counts.map((c) => `${c.key}: ${c.n} points, last ${formatMetric(c.last)}`).join("; ");

  return (
    <figure className="chart" data-testid={`chart-${name}`}>
      <figcaption>{title}</figcaption>
      {keys.length === 0 ? (
        <p className="muted small chart-empty">No points yet.</p>
      ) : (
        <div ref={box} className="chart-box" role="img" aria-label={`${title}. ${described}`} />
      )}
      <ul className="chart-counts">
        {counts.map((c) => (
          <li key={c.key}>
            {c.key}: <span data-testid={`points-${c.key}`}>{c.n}</span> points, last {formatMetric(c.last)}
          </li>
        ))}
      </ul>
    </figure>
  );
});
