// The sweep page's plots in SVG: parallel coordinates (one axis per searched parameter plus the
// objective, one line per trial coloured by its objective, pruned trials dim) and one small
// scatter plot per parameter (objective against that parameter).
import { useState } from "react";
import {
  type Axis,
  OBJECTIVE_KEY,
  type PlotBox,
  axisX,
  axisY,
  colourFor,
  drawnTrials,
  drawnValue,
  goodness,
  position,
  sweepAxes,
  ticks,
  trialPoints,
} from "./parallel";
import type { Objective, SearchSpace, SweepTrial } from "./types";

function AxisLine({ axis, x, box, anchor = "middle" }: { axis: Axis; x: number; box: PlotBox; anchor?: "start" | "middle" | "end" }) {
  return (
    <g className="pc-axis" data-testid={`pc-axis-${axis.key === OBJECTIVE_KEY ? "objective" : axis.key}`} data-kind={axis.kind}>
      <line x1={x} x2={x} y1={axisY(box, 0)} y2={axisY(box, 1)} />
      {ticks(axis).map((t) => (
        <g key={`${t.value}-${t.at}`}>
          <line x1={x - 3} x2={x + 3} y1={axisY(box, t.at)} y2={axisY(box, t.at)} />
          <text className="tick" x={x + 5} y={axisY(box, t.at) + 3}>
            {t.value}
          </text>
        </g>
      ))}
      <text className="axis-label" x={x} y={box.top - 10} textAnchor={anchor}>
        {axis.label}
        {axis.kind === "log" ? " (log)" : ""}
      </text>
    </g>
  );
}

export function ParallelCoordinates({
  space,
  trials,
  objective,
  bestNumber,
}: {
  space: SearchSpace;
  trials: SweepTrial[];
  objective: Objective;
  bestNumber: number | null;
}) {
  const [hover, setHover] = useState<number | null>(null);
  const drawn = drawnTrials(trials);
  const axes = sweepAxes(space, trials, objective.metric);
  // A wide box that scales down with the page: the axes spread over the whole panel.
  const box: PlotBox = { width: 1100, height: 330, left: 60, right: 90, top: 34, bottom: 16 };
  const objectiveAxis = axes[axes.length - 1];
  // Pruned trials first, the best last: the good lines are on top.
  const order = [...drawn].sort((a, b) => {
    const rank = (t: SweepTrial) => (t.number === bestNumber ? 2 : t.state === "pruned" ? 0 : 1);
    return rank(a) - rank(b) || goodness(objectiveAxis, drawnValue(a)!, objective.mode) - goodness(objectiveAxis, drawnValue(b)!, objective.mode);
  });
  const hovered = drawn.find((t) => t.number === hover);
  return (
    <figure className="parallel-coordinates" data-testid="parallel-coordinates" data-lines={order.length}>
      <svg viewBox={`0 0 ${box.width} ${box.height}`} role="img" aria-label={`Parallel coordinates of ${drawn.length} trials: parameters against ${objective.metric}`}>
        <g className="pc-lines">
          {order.map((t) => {
            const points = trialPoints(axes, t, box);
            if (!points) return null;
            const g = goodness(objectiveAxis, drawnValue(t)!, objective.mode);
            const cls = ["pc-line", t.state === "pruned" ? "pruned" : "", t.number === bestNumber ? "best" : "", t.number === hover ? "hover" : ""].filter(Boolean).join(" ");
            return (
              <polyline
                key={t.number}
                className={cls}
                data-testid="pc-line"
                data-trial={t.number}
                data-state={t.state}
                points={points}
                stroke={colourFor(g)}
                onMouseEnter={() => setHover(t.number)}
                onMouseLeave={() => setHover(null)}
              >
                <title>
                  trial {t.number} ({t.state}): {objective.metric} {drawnValue(t)}
                </title>
              </polyline>
            );
          })}
        </g>
        {axes.map((a, i) => (
          <AxisLine key={a.key} axis={a} x={axisX(box, i, axes.length)} box={box} anchor={i === 0 ? "start" : i === axes.length - 1 ? "end" : "middle"} />
        ))}
      </svg>
      <figcaption className="small muted">
        One line per trial, coloured by {objective.metric} (dark blue: better, {objective.mode === "min" ? "lower" : "higher"}; orange: worse); pruned
        trials are grey and dashed, drawn at their last reported value; the best is thick.
        {hovered && (
          <span data-testid="pc-hover">
            {" "}
            Trial {hovered.number}: {Object.entries(hovered.params).map(([k, v]) => `${k}=${String(v)}`).join(", ")} → {drawnValue(hovered)}
          </span>
        )}
      </figcaption>
    </figure>
  );
}

/** Objective against each parameter, one small scatter plot per searched key. */
export function ParamScatters({ space, trials, objective }: { space: SearchSpace; trials: SweepTrial[]; objective: Objective }) {
  const axes = sweepAxes(space, trials, objective.metric);
  const objectiveAxis = axes[axes.length - 1];
  const drawn = drawnTrials(trials);
  const box: PlotBox = { width: 240, height: 170, left: 44, right: 10, top: 10, bottom: 34 };
  const x = (at: number) => box.left + at * (box.width - box.left - box.right);
  return (
    <div className="param-scatters" data-testid="param-scatters">
      {axes.slice(0, -1).map((a) => (
        <figure key={a.key} className="param-scatter" data-testid={`scatter-${a.key}`}>
          <figcaption>
            {objective.metric} vs {a.label}
          </figcaption>
          <svg viewBox={`0 0 ${box.width} ${box.height}`} role="img" aria-label={`${objective.metric} against ${a.label}`}>
            <rect className="plot-area" x={box.left} y={box.top} width={box.width - box.left - box.right} height={box.height - box.top - box.bottom} />
            {ticks(objectiveAxis, 4).map((t) => (
              <text key={`y${t.value}`} className="tick" x={box.left - 4} y={axisY(box, t.at) + 3} textAnchor="end">
                {t.value}
              </text>
            ))}
            {ticks(a, 4).map((t) => (
              <text key={`x${t.value}`} className="tick" x={x(t.at)} y={box.height - box.bottom + 12} textAnchor="middle">
                {t.value}
              </text>
            ))}
            <text className="axis-label" x={(box.left + box.width - box.right) / 2} y={box.height - 4} textAnchor="middle">
              {a.label}
              {a.kind === "log" ? " (log)" : ""}
            </text>
            {drawn.map((t) => {
              const px = position(a, t.params?.[a.key]);
              const py = position(objectiveAxis, drawnValue(t));
              if (px === null || py === null) return null;
              return (
                <circle
                  key={t.number}
                  className={t.state === "pruned" ? "pruned" : undefined}
                  cx={x(px)}
                  cy={axisY(box, py)}
                  r={3.5}
                  fill={colourFor(goodness(objectiveAxis, drawnValue(t)!, objective.mode))}
                >
                  <title>
                    trial {t.number}: {String(t.params?.[a.key])} → {drawnValue(t)}
                  </title>
                </circle>
              );
            })}
          </svg>
        </figure>
      ))}
    </div>
  );
}
