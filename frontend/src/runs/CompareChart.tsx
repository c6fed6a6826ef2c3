// One metric of several runs (uPlot): every run's curve overlaid, a colour per run, the legend
// naming the runs. The page decides the view (x by step or epoch, log y, smoothing).
//
// Dragging over the chart (by step) zooms in and fetches that window of steps for every run at full
// resolution (GET /api/runs/compare/?keys=<key>&from_step=&to_step=); a double click or "Reset
// zoom" goes back to the overview the page fetched.
import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { ChartView } from "./chartView";
import { type RunCurve, alignRuns, maxPointsFor, overlayData, runColor } from "./compare";
import { formatMetric, formatTicks } from "./format";
import { type StepWindow, stepWindow } from "./series";

const HEIGHT = 240;

export interface CompareChartProps {
  metric: string;
  /** The runs' curves of `metric`, in the comparison's order (a run without it has no series). */
  curves: RunCurve[];
  view: ChartView;
  /** The same runs' curves of `metric` in a window of steps, about `maxPoints` each; null on failure. */
  fetchWindow: (metric: string, window: StepWindow, maxPoints: number) => Promise<RunCurve[] | null>;
}

export const CompareChart = memo(function CompareChart({ metric, curves, view, fetchWindow }: CompareChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [zoom, setZoom] = useState<{ window: StepWindow; curves: RunCurve[] | null } | null>(null);
  const generation = useRef(0);
  const viewRef = useRef(view);
  viewRef.current = view;

  const zoomTo = useCallback(
    (window: StepWindow) => {
      const mine = ++generation.current;
      setZoom({ window, curves: null });
      const width = box.current?.clientWidth ?? 600;
      void fetchWindow(metric, window, maxPointsFor(width)).then((answer) => {
        // Only the newest zoom counts: a later zoom or a reset drops this answer.
        if (mine === generation.current) setZoom(answer ? { window, curves: answer } : null);
      });
    },
    [fetchWindow, metric],
  );
  const resetZoom = useCallback(() => {
    generation.current++;
    setZoom(null);
  }, []);

  const shown = zoom?.curves ?? curves;
  // Aligning the runs is the costly part: kept while only log y or smoothing moves.
  const aligned = useMemo(() => alignRuns(shown, view.x), [shown, view.x]);
  const { data, lines } = useMemo(() => overlayData(shown, view, aligned), [shown, view, aligned]);
  // A new chart only when what is drawn changes shape; new values (smoothing) are setData.
  const shape = `${view.x}|${view.log}|${lines.map((l) => `${l.run}:${l.raw}:${l.label}`).join(",")}`;
  const dataRef = useRef(data);
  dataRef.current = data;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(240, el.clientWidth),
      height: HEIGHT,
      scales: { x: { time: false }, y: view.log ? { distr: 3 } : {} },
      axes: [{ label: view.x }, { size: 56, values: (_u: uPlot, splits: number[]) => formatTicks(splits) }],
      series: [
        { label: view.x },
        ...lines.map((l) => ({
          label: l.label,
          class: l.raw ? "raw-line" : "run-line",
          stroke: l.raw ? `${runColor(l.index)}40` : runColor(l.index),
          width: l.raw ? 1 : 1.6,
          spanGaps: true,
          // uPlot shows dots only where points are far apart (a few epochs of val/*), never for raw lines.
          ...(l.raw ? { points: { show: false } } : {}),
          value: (_u: uPlot, v: number | null) => formatMetric(v),
        })),
      ],
      legend: { show: true, live: true },
      hooks: {
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
    const u = new uPlot(opts, dataRef.current as uPlot.AlignedData, el);
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(240, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    const onDoubleClick = () => resetZoom();
    u.over.addEventListener("dblclick", onDoubleClick);
    return () => {
      u.over.removeEventListener("dblclick", onDoubleClick);
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, zoomTo, resetZoom]);

  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    u.setData(data as uPlot.AlignedData, !zoom?.curves);
    if (zoom?.curves && view.x === "step") u.setScale("x", { min: zoom.window.from, max: zoom.window.to });
  }, [data, zoom, view.x]);

  // A new view by epoch has no step window to keep.
  useEffect(() => {
    if (view.x !== "step") resetZoom();
  }, [view.x, resetZoom]);

  const drawn = lines.filter((l) => !l.raw);
  const described = drawn
    .map((l) => {
      const values = shown[l.index]?.series?.value ?? [];
      return `${l.label}: ${values.length} points, last ${formatMetric(values[values.length - 1])}`;
    })
    .join("; ");

  return (
    <figure className="chart compare-chart" data-testid={`compare-chart-${metric}`} data-runs={drawn.length}>
      <figcaption>
        {metric}
        {zoom && (
          <>
            {" "}
            <span className="muted small" data-testid={`compare-zoom-${metric}`}>
              steps {zoom.window.from}–{zoom.window.to}
              {zoom.curves ? "" : " (loading)"}
            </span>{" "}
            <button type="button" className="link small" onClick={resetZoom}>
              Reset zoom
            </button>
          </>
        )}
      </figcaption>
      <div ref={box} className="chart-box" role="img" aria-label={`${metric}. ${described}`} />
    </figure>
  );
});
