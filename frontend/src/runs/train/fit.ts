// Does the graph fit the dataset? The same comparison the server makes when a run is created
// (webapp/runs/checks.py: one input of the dataset's feature shape, one output as wide as the
// classes or the regression target), made as the dataset is picked, each problem worded with its fix.
import { formatShape } from "../../format";

/** The graph as the check sees it: its inputs and the shapes of its outputs (null: not known). */
export interface GraphShapes {
  inputs: { id: string; shape: number[] }[];
  outputs: Record<string, number[] | null>;
}

/** What the dataset's summary says (the fields this check reads). */
export interface DataShape {
  task?: string | null;
  feature_shape?: number[] | null;
  num_classes?: number | null;
  classes?: string[] | null;
  output_size?: number | null;
  target?: { mean?: unknown } | null;
}

export interface FitProblem {
  /** "input", "output" or "task": which side of the graph to change. */
  part: "input" | "output" | "task";
  /** The node to change, when there is one. */
  node: string | null;
  message: string;
}

function sizeWords(shape: number[]): string {
  return shape.length === 1 ? `${shape[0]} feature${shape[0] === 1 ? "" : "s"}` : `shape ${formatShape(shape)}`;
}

/** (task, allowed widths of the last layer), as the server works them out. */
export function expectedOutputWidths(summary: DataShape, loss?: unknown): { task: string; widths: number[] } {
  const task = summary.task || "classification";
  let widths: number[];
  if (summary.output_size != null) widths = [Number(summary.output_size)];
  else if (task === "classification") widths = [Number(summary.num_classes ?? 0)];
  else {
    const mean = summary.target?.mean;
    widths = [Array.isArray(mean) ? mean.length : 1];
  }
  if (task === "classification" && widths.length === 1 && widths[0] === 2 && loss === "bce_with_logits") widths = [1];
  return { task, widths };
}

function classesWords(summary: DataShape, n: number): string {
  const names = summary.classes ?? [];
  const shown = names.length && names.length <= 6 ? ` (${names.join(", ")})` : "";
  return `${n} class${n === 1 ? "" : "es"}${shown}`;
}

/** Every way the graph does not fit the dataset, each with what to change; empty when it fits. */
export function graphFitProblems(graph: GraphShapes, summary: DataShape, loss?: unknown): FitProblem[] {
  const problems: FitProblem[] = [];
  const features = summary.feature_shape;
  if (features && graph.inputs.length !== 1) {
    problems.push({
      part: "input",
      node: null,
      message: `The graph has ${graph.inputs.length} inputs; a dataset gives one: keep one Input node, of shape ${formatShape(features)}.`,
    });
  } else if (features && graph.inputs.length === 1) {
    const { id, shape } = graph.inputs[0];
    if (JSON.stringify(shape) !== JSON.stringify(features)) {
      problems.push({
        part: "input",
        node: id,
        message: `The graph's input ${id} takes ${sizeWords(shape)}; this dataset has ${sizeWords(features)}: set ${id}'s shape to ${formatShape(features)}.`,
      });
    }
  }
  const outputs = Object.entries(graph.outputs);
  const { task, widths } = expectedOutputWidths(summary, loss);
  if (outputs.length !== 1) {
    problems.push({ part: "output", node: null, message: `A run trains one output; the graph has ${outputs.length}: keep one.` });
    return problems;
  }
  const [[node, shape]] = outputs;
  if (shape === null) return problems; // not known: the input mismatch (if any) is the first fix
  const want = widths[0];
  if (shape.length !== 1) {
    problems.push({
      part: "task",
      node,
      message: `The output ${node} gives ${formatShape(shape)}; ${task} needs one vector of ${want}: add a Flatten and a Linear with out_features ${want} before the output.`,
    });
  } else if (!widths.includes(shape[0])) {
    const what = task === "classification" ? `this dataset has ${classesWords(summary, want)}` : `this dataset's target has width ${want} (regression)`;
    problems.push({
      part: "output",
      node,
      message: `The last layer ${node} gives ${shape[0]} output${shape[0] === 1 ? "" : "s"}; ${what}: set ${node}'s out_features to ${want}.`,
    });
  }
  return problems;
}
