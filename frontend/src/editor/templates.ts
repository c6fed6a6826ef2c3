// Starter graphs: the engine's examples/specs/*.json, bundled at build time (never retyped here).
import type { GraphSpec } from "../api/types";

const files = import.meta.glob<GraphSpec>("../../../examples/specs/*.json", { eager: true, import: "default" });

export interface Template {
  key: string;
  label: string;
  spec: GraphSpec;
}

function labelOf(key: string, spec: GraphSpec): string {
  const ui = spec.ui as { title?: unknown; name?: unknown } | undefined;
  if (typeof ui?.title === "string") return ui.title;
  if (typeof ui?.name === "string") return ui.name;
  const words = key.replace(/[_-]+/g, " ");
  return words.replace(/\b(mlp|cnn|gru|lstm|rnn)\b/gi, (w) => w.toUpperCase()).replace(/^./, (c) => c.toUpperCase());
}

export const TEMPLATES: Template[] = Object.entries(files)
  .map(([path, spec]) => {
    const key = path.split("/").pop()!.replace(/\.json$/, "");
    return { key, label: labelOf(key, spec), spec };
  })
  .sort((a, b) => a.key.localeCompare(b.key));
