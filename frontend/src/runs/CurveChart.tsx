// A small SVG chart of the evaluation curves (reliability, ROC, precision-recall, predicted vs
// true, residual histogram): lines, dots or bars over linear axes with ticks at the ends.
import { extent, type CurveSeries } from "./curves";

const W = 280;
const H = 200;
const PAD = { left: 40, right: 10, top: 10, bottom: 34 };

function tick(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0) ? v.toExponential(1) : String(Number(v.toFixed(2)));
}

export function CurveChart({
  name,
  title,
  series,
  xLabel,
  yLabel,
  unitSquare = false,
  note,
  explain,
}: {
  name: string;
  title: string;
  series: CurveSeries[];
  xLabel: string;
  yLabel: string;
  /** Both axes 0..1 (rates, probabilities). */
  unitSquare?: boolean;
  note?: string;
  /** Why the chart shows no curve (said under it), when it has none. */
  explain?: string | null;
}) {
  const [x0, x1] = extent(series, "x", unitSquare ? [0, 1] : undefined);
  const [y0, y1] = extent(series, "y", unitSquare ? [0, 1] : undefined);
  const sx = (x: number) => PAD.left + ((x - x0) / (x1 - x0)) * (W - PAD.left - PAD.right);
  const sy = (y: number) => H - PAD.bottom - ((y - y0) / (y1 - y0)) * (H - PAD.top - PAD.bottom);
  const bars = series.find((s) => s.kind === "bars");
  const barWidth = bars && bars.points.length > 1 ? Math.max(1, ((W - PAD.left - PAD.right) / bars.points.length) * 0.9) : 8;
  const drawn = series.reduce((n, s) => n + (s.className === "ref" ? 0 : s.points.length), 0);
  return (
    <figure className="curve-chart" data-testid={`curve-${name}`} data-points={drawn}>
      <figcaption>
        {title}
        {note && <span className="muted"> · {note}</span>}
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}: ${yLabel} over ${xLabel}`}>
        <rect x={PAD.left} y={PAD.top} width={W - PAD.left - PAD.right} height={H - PAD.top - PAD.bottom} className="plot-area" />
        {series.map((s, k) =>
          s.kind === "line" ? (
            <polyline key={k} className={`curve ${s.className ?? `curve-${k}`}`} fill="none" points={s.points.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ")}>
              <title>{s.label}</title>
            </polyline>
          ) : s.kind === "dots" ? (
            <g key={k} className={`dots curve-${k}`}>
              {s.points.map((p, i) => (
                <circle key={i} cx={sx(p.x)} cy={sy(p.y)} r={s.points.length === 1 ? 4 : 2} />
              ))}
            </g>
          ) : (
            <g key={k} className="bars">
              {s.points.map((p, i) => (
                <rect key={i} x={sx(p.x) - barWidth / 2} y={sy(Math.max(p.y, 0))} width={barWidth} height={Math.abs(sy(0) - sy(p.y))}>
                  <title>{`${tick(p.x)}: ${p.y}`}</title>
                </rect>
              ))}
            </g>
          ),
        )}
        <text x={PAD.left} y={H - PAD.bottom + 12} className="tick" textAnchor="start">
          {tick(x0)}
        </text>
        <text x={W - PAD.right} y={H - PAD.bottom + 12} className="tick" textAnchor="end">
          {tick(x1)}
        </text>
        <text x={PAD.left - 4} y={H - PAD.bottom} className="tick" textAnchor="end">
          {tick(y0)}
        </text>
        <text x={PAD.left - 4} y={PAD.top + 8} className="tick" textAnchor="end">
          {tick(y1)}
        </text>
        <text x={(W + PAD.left) / 2} y={H - 6} className="axis-label" textAnchor="middle">
          {xLabel}
        </text>
        <text x={12} y={(H - PAD.bottom) / 2} className="axis-label" textAnchor="middle" transform={`rotate(-90 12 ${(H - PAD.bottom) / 2})`}>
          {yLabel}
        </text>
      </svg>
      {explain && (
        <p className="muted small curve-explain" data-testid={`curve-${name}-explain`}>
          {explain}
        </p>
      )}
    </figure>
  );
}
