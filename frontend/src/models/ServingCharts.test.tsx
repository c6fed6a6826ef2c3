import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { ServingChartsView, chartLines } from "./ServingCharts";
import { addStats, emptyHistory } from "./serving";

const stats = (requests: number) => ({
  window_s: 10,
  versions: { "2": { requests, errors: 0, latency_ms: { p50: 3, p95: 8, p99: 9 }, batch_size_mean: 4, queue_depth: 0 } },
});

describe("the live traffic charts", () => {
  it("say why there is nothing to draw: not served, figures unavailable, no requests yet", () => {
    const none = renderToStaticMarkup(<ServingChartsView endpoint={null} history={emptyHistory()} error={null} />);
    expect(none).toContain("Not served yet");
    const down = renderToStaticMarkup(<ServingChartsView endpoint="http://x/v2/models/1-a" history={emptyHistory()} error="502" />);
    expect(down).toContain("not available (502)");
    const quiet = renderToStaticMarkup(
      <ServingChartsView endpoint="http://x/v2/models/1-a" history={addStats(emptyHistory(), stats(0), 1)} error={null} />,
    );
    expect(quiet).toContain("No requests yet");
    expect(quiet).not.toContain("chart-serving-rps");
  });

  it("draw requests per second and p50/p99 per version once there is traffic", () => {
    const history = addStats(emptyHistory(), stats(40), 1);
    const html = renderToStaticMarkup(<ServingChartsView endpoint="http://x/v2/models/1-a" history={history} error={null} />);
    expect(html).toContain('data-testid="chart-serving-rps"');
    expect(html).toContain('data-testid="chart-serving-latency"');
    const lines = chartLines(history);
    expect(lines.rps.map((l) => [l.label, l.values])).toEqual([["v2", [4]]]);
    expect(lines.latency.map((l) => [l.label, l.values, l.dash ?? null])).toEqual([
      ["v2 p50", [3], null],
      ["v2 p99", [9], [6, 4]],
    ]);
  });
});
