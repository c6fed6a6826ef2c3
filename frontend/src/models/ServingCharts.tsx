// Live charts of a served model: requests per second and p50/p99 latency per version, from the
// model server's `<endpoint>/stats`, polled every 2 s while the page is visible (a hidden tab
// asks nothing). Without an endpoint, or before any request, it says so instead of drawing.
import { useEffect, useRef, useState } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatTicks } from "../runs/format";
import { type ServingStats, type StatsHistory, addStats, emptyHistory, hasTraffic, servingRequest, versionNames } from "./serving";

export const POLL_MS = 2000;
const COLORS = ["#2f6fdd", "#e0662b", "#2e7d32", "#8e44ad", "#c62828", "#00838f"];
const HEIGHT = 180;

type Line = { label: string; values: (number | null)[]; color: string; dash?: number[] };

function Chart({ title, name, t, lines, unit }: { title: string; name: string; t: number[]; lines: Line[]; unit: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = lines.map((l) => l.label).join(",");
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const u = new uPlot(
      {
        width: Math.max(200, el.clientWidth),
        height: HEIGHT,
        scales: { x: { time: true } },
        axes: [{}, { size: 56, label: unit, values: (_u: uPlot, splits: number[]) => formatTicks(splits) }],
        series: [{}, ...lines.map((l) => ({ label: l.label, stroke: l.color, dash: l.dash, width: 1.5, spanGaps: false }))],
        legend: { show: true },
      },
      [t, ...lines.map((l) => l.values)] as uPlot.AlignedData,
      el,
    );
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: HEIGHT }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
    // A new set of lines (a version appeared) needs a new chart; new points only new data.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape]);
  useEffect(() => {
    plot.current?.setData([t, ...lines.map((l) => l.values)] as uPlot.AlignedData);
  }, [t, lines]);
  return (
    <figure className="chart" data-testid={`chart-${name}`}>
      <figcaption>{title}</figcaption>
      <div ref={box} />
    </figure>
  );
}

/** The charts' lines from the history: requests/s per version; p50 (solid) and p99 (dashed). */
export function chartLines(history: StatsHistory): { rps: Line[]; latency: Line[] } {
  const names = versionNames(history);
  const color = (i: number) => COLORS[i % COLORS.length];
  return {
    rps: names.map((n, i) => ({ label: `v${n}`, values: history.versions[n].rps, color: color(i) })),
    latency: names.flatMap((n, i) => [
      { label: `v${n} p50`, values: history.versions[n].p50, color: color(i) },
      { label: `v${n} p99`, values: history.versions[n].p99, color: color(i), dash: [6, 4] },
    ]),
  };
}

/** What the panel shows for the history it holds: charts, or the empty state and why. */
export function ServingChartsView({ endpoint, history, error }: { endpoint: string | null; history: StatsHistory; error: string | null }) {
  let body;
  if (!endpoint) {
    body = (
      <p className="muted" data-testid="charts-empty">
        Not served yet: the charts follow the model server once it serves this model.
      </p>
    );
  } else if (error && history.t.length === 0) {
    body = (
      <p className="muted" data-testid="charts-empty">
        The model server's figures are not available ({error}).
      </p>
    );
  } else if (!hasTraffic(history)) {
    body = (
      <p className="muted" data-testid="charts-empty">
        No requests yet{history.t.length ? " in the figures the server keeps" : ""}: send one with the form above, or from a
        program; the charts start with the first request.
      </p>
    );
  } else {
    const lines = chartLines(history);
    body = (
      <div className="chart-grid">
        <Chart title="Requests per second" name="serving-rps" t={history.t} lines={lines.rps} unit="req/s" />
        <Chart title="Latency (p50 solid, p99 dashed)" name="serving-latency" t={history.t} lines={lines.latency} unit="ms" />
      </div>
    );
  }
  return (
    <section className="panel" aria-labelledby="serving-title" data-testid="serving-charts">
      <h2 id="serving-title">Live traffic</h2>
      {body}
    </section>
  );
}

/** Polls `<endpoint>/stats` every 2 s while the page is visible, and draws it. */
export function ServingCharts({ endpoint }: { endpoint: string | null }) {
  const [history, setHistory] = useState<StatsHistory>(emptyHistory);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setHistory(emptyHistory());
    if (!endpoint) return;
    let timer: number | null = null;
    let abort: AbortController | null = null;
    const poll = async () => {
      abort = new AbortController();
      try {
        const stats = await servingRequest<ServingStats>("GET", `${endpoint}/stats`, undefined, abort.signal);
        setHistory((h) => addStats(h, stats, Date.now() / 1000));
        setError(null);
      } catch (e) {
        if ((e as Error).name !== "AbortError") setError((e as Error).message);
      }
    };
    const start = () => {
      if (timer !== null || document.visibilityState !== "visible") return;
      void poll();
      timer = window.setInterval(() => void poll(), POLL_MS);
    };
    const stop = () => {
      if (timer !== null) window.clearInterval(timer);
      timer = null;
      abort?.abort();
    };
    const onVisibility = () => (document.visibilityState === "visible" ? start() : stop());
    document.addEventListener("visibilitychange", onVisibility);
    start();
    return () => {
      document.removeEventListener("visibilitychange", onVisibility);
      stop();
    };
  }, [endpoint]);
  return <ServingChartsView endpoint={endpoint} history={history} error={error} />;
}
