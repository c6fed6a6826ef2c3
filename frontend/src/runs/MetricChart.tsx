// One live line chart (uPlot) of some metric series against the training step.
//
// Dragging over the chart zooms in (uPlot's select -> setScale) and fetches that window of steps
// at full resolution from the server (every stored point when the window holds at most
// ZOOM_POINTS); a double click or "Reset zoom" goes back to the live overview.
import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { runsApi } from "./api";
import { formatMetric, formatTicks } from "./format";
import { type SeriesSet, type StepWindow, ZoomLoader, stepWindow } from "./series";
import { type ChartView, DEFAULT_VIEW, viewData } from "./chartView";

const COLORS = ["#2f6fdd", "#e0662b", "#2e7d32", "#8e44ad", "#c62828", "#00838f"];
const HEIGHT = 220;
/** Points per series asked for a zoomed window (the server's max_points). */
export const ZOOM_POINTS = 1000;

export interface MetricChartProps {
  title: string;
  /** Name used in test ids (`chart-<name>`). */
  name: string;
  series: SeriesSet;
  /** Bumped whenever `series` changed (SeriesSet.version). */
  version: number;
  keys: string[];
  /** The run whose window a zoom fetches; without it the chart zooms on what it holds. */
  runId?: number;
}

export const MetricChart = memo(function MetricChart({ title, name, series, version, keys, runId }: MetricChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const frame = useRef<number | null>(null);
  const keyList = keys.join(",");
  const loader = useMemo(
    () =>
      new ZoomLoader((k, w, maxPoints) =>
        runId === undefined ? Promise.reject(new Error("no run")) : runsApi.metricsWindow(runId, k, w, maxPoints),
      ZOOM_POINTS),
    [runId],
  );
  // The zoomed window and its full-resolution series (null: the live overview).
  const [zoom, setZoom] = useState<{ window: StepWindow; series: SeriesSet | null } | null>(null);
  const zoomRef = useRef(zoom);
  zoomRef.current = zoom;
  const keysRef = useRef(keys);
  keysRef.current = keys;
  // How the chart reads (chartView.ts): x by step or epoch, log y, smoothing over the faint raw curve.
  const [view, setView] = useState<ChartView>(DEFAULT_VIEW);
  const viewRef = useRef(view);
  viewRef.current = view;

  const zoomTo = useCallback(
    (window: StepWindow) => {
      setZoom({ window, series: null });
      void loader.zoom(keysRef.current, window).then((windowSeries) => {
        if (windowSeries && loader.window === window) setZoom({ window, series: windowSeries });
      });
    },
    [loader],
  );
  const resetZoom = useCallback(() => {
    loader.reset();
    setZoom(null);
  }, [loader]);

  // A new set of keys (val/loss appears after the first epoch) needs a new chart.
  useEffect(() => {
    const el = box.current;
    if (!el || keys.length === 0) return;
    const { data, lines } = viewData(series, keys, view);
    const color = (k: string) => COLORS[keys.indexOf(k) % COLORS.length];
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: HEIGHT,
      scales: { x: { time: false }, y: view.log ? { distr: 3 } : {} },
      axes: [{ label: view.x }, { size: 56, values: (_u: uPlot, splits: number[]) => formatTicks(splits) }],
      series: [
        { label: view.x },
        ...lines.map((l) => ({
          label: l.label,
          stroke: l.raw ? `${color(l.key)}40` : color(l.key),
          width: l.raw ? 1 : 1.5,
          spanGaps: true,
          points: { show: false },
        })),
      ],
      legend: { show: true },
      hooks: {
        // A drag selects a stretch of steps; uPlot then zooms its x scale to it (drag.setScale).
        setSelect: [
          (chart) => {
            if (chart.select.width <= 0 || viewRef.current.x !== "step") return; // windows are steps
            const window = stepWindow(
              chart.posToVal(chart.select.left, "x"),
              chart.posToVal(chart.select.left + chart.select.width, "x"),
            );
            if (window) zoomTo(window);
          },
        ],
      },
    };
    const u = new uPlot(opts, data as uPlot.AlignedData, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    // uPlot's own double click autoscales to the data shown; this one goes back to the overview.
    const onDoubleClick = () => resetZoom();
    u.over.addEventListener("dblclick", onDoubleClick);
    return () => {
      u.over.removeEventListener("dblclick", onDoubleClick);
      resize.disconnect();
      u.destroy();
      plot.current = null;
      resetZoom(); // a new chart (new keys) starts on the overview
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [keyList, series, view]);

  // New points: redraw at most once a frame (the overview only: a zoomed chart shows its window).
  useEffect(() => {
    if (zoomRef.current || frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      if (!zoomRef.current) plot.current?.setData(viewData(series, keys, viewRef.current).data as uPlot.AlignedData);
    });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, keyList, series]);

  // Zoomed: the window's own points, on the window's scale; reset: the overview, autoscaled.
  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    if (zoom === null) {
      u.setData(viewData(series, keys, viewRef.current).data as uPlot.AlignedData, true);
    } else if (zoom.series) {
      u.setData(viewData(zoom.series, keys, viewRef.current).data as uPlot.AlignedData, false);
      u.setScale("x", { min: zoom.window.from, max: zoom.window.to });
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [zoom]);

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
      <figcaption>
        {title}
        <span className="chart-view small">
          <select aria-label={`${title}: x axis`} data-testid={`chart-x-${name}`} value={view.x} onChange={(e) => setView({ ...view, x: e.target.value as ChartView["x"] })}>
            <option value="step">by step</option>
            <option value="epoch">by epoch</option>
          </select>
          <label>
            <input type="checkbox" data-testid={`chart-log-${name}`} checked={view.log} onChange={(e) => setView({ ...view, log: e.target.checked })} /> log y
          </label>
          <label title="Exponential moving average; the raw curve stays faint behind">
            smoothing{" "}
            <input
              type="range"
              data-testid={`chart-smooth-${name}`}
              min={0}
              max={0.95}
              step={0.05}
              value={view.smoothing}
              onChange={(e) => setView({ ...view, smoothing: Number(e.target.value) })}
            />
          </label>
        </span>
        {zoom && (
          <>
            {" "}
            <span className="muted small" data-testid={`zoom-${name}`}>
              steps {zoom.window.from}–{zoom.window.to}
              {zoom.series ? "" : " (loading)"}
            </span>{" "}
            <button type="button" className="link small" data-testid={`zoom-reset-${name}`} onClick={resetZoom}>
              Reset zoom
            </button>
          </>
        )}
      </figcaption>
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
