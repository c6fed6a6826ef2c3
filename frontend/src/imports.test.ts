// No two modules of the frontend import each other, directly or around a circle: a circle makes
// the load order decide what a module sees at its top level, and ties concerns that should part.
import { describe, expect, it } from "vitest";

/** Every source file under src, by its path from here ("./editor/blocks.ts"), as text. */
const sources = import.meta.glob<string>("./**/*.{ts,tsx}", { query: "?raw", import: "default", eager: true });

// `import x from "./a"`, `import type { T } from "./a"`, `export * from "./a"`, `import "./a"`, each
// at the start of a line (a named list may run over several lines).
const CLAUSE = String.raw`(?:type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\}|\w+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+\w+))?)\s+from\s+`;
const IMPORT = new RegExp(String.raw`^[ \t]*(?:import\s+(?:${CLAUSE})?|export\s+${CLAUSE})["']([^"']+)["']`, "gm");

/** The relative module specifiers a source names in its import and export-from statements. */
function relativeImports(source: string): string[] {
  return [...source.matchAll(IMPORT)].map((m) => m[1]).filter((s) => s.startsWith("./") || s.startsWith("../"));
}

function resolve(from: string, spec: string, files: Set<string>): string | null {
  const parts = from.split("/").slice(0, -1);
  for (const p of spec.split("?")[0].split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  const base = parts.join("/");
  for (const c of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) if (files.has(c)) return c;
  return null;
}

/** Module -> the modules it imports (only those among `sources`: styles and data files drop out). */
function importGraph(sources: Record<string, string>): Map<string, string[]> {
  const files = new Set(Object.keys(sources));
  const graph = new Map<string, string[]>();
  for (const [file, text] of Object.entries(sources)) {
    const targets = relativeImports(text)
      .map((s) => resolve(file, s, files))
      .filter((t): t is string => t !== null);
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/** One circle per back edge a depth-first walk meets, each written "a -> b -> a". */
function importCycles(graph: Map<string, string[]>): string[] {
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next].join(" -> "));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

describe("the frontend's imports", () => {
  it("reads import and export-from statements, over several lines too", () => {
    const text = [
      'import { a } from "./a";',
      'import type { B } from "../b";',
      "import {",
      "  c,",
      "  type D,",
      '} from "./c";',
      'import React, { useState } from "react";',
      'export * from "./e";',
      'export { f } from "./f";',
      'import "./g.css";',
      '// import { h } from "./h";',
      'const s = "import x from \'./i\'";',
      'export function g() { return "from"; }',
    ].join("\n");
    expect(relativeImports(text)).toEqual(["./a", "../b", "./c", "./e", "./f", "./g.css"]);
  });

  it("names a circle it finds", () => {
    const graph = importGraph({
      "./x/a.ts": 'import { b } from "./b";',
      "./x/b.ts": 'import { c } from "../c";',
      "./c.ts": 'import { a } from "./x/a";\nimport "./d";',
      "./d.ts": "",
    });
    expect(importCycles(graph)).toEqual(["./c.ts -> ./x/a.ts -> ./x/b.ts -> ./c.ts"]);
  });

  it("has no circle in src", () => {
    const graph = importGraph(sources);
    expect(graph.size).toBeGreaterThan(50);
    expect(importCycles(graph)).toEqual([]);
  });
});
