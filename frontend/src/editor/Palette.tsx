// The op palette: the server's catalog grouped by category, searchable, drag onto the canvas or press Enter.
import { memo, useMemo, useState } from "react";
import type { OpSchema } from "../api/types";
import type { LibraryBlock } from "./blockLibrary";
import { BLOCK_CATEGORY } from "./blocks";

export const OP_MIME = "application/x-netloom-op";
/** A team block dragged from the palette: `{"id": 7, "version": 2}`. */
export const BLOCK_MIME = "application/x-netloom-block";

/** How well an op matches: its name, its PyTorch name (nn.Conv2d, torch.split), its category, its search words, its help. */
function matchScore(op: OpSchema, q: string): number {
  const name = op.name.toLowerCase();
  if (name === q) return 0;
  const torchName = (op.torch_name ?? "").toLowerCase();
  // "nn.conv2d", "torch.split", "F.pad" and "functional.pad" all find their op.
  const torchTail = torchName.split(".").pop() ?? "";
  const bare = q.replace(/^(torch\.nn\.functional\.|torch\.nn\.|nn\.functional\.|torch\.|nn\.|f\.)/, "");
  if (torchName === q || (bare !== q && (torchTail === bare || name === bare))) return 1;
  if (name.startsWith(q)) return 2;
  if (name.includes(q) || (torchName && torchName.includes(q))) return 3;
  const keywords = (op.keywords ?? []).map((k) => k.toLowerCase());
  if (keywords.some((k) => k === q)) return 4;
  if (keywords.some((k) => k.includes(q)) || op.category.toLowerCase().includes(q)) return 5;
  if ((op.help ?? "").toLowerCase().includes(q)) return 6;
  // Several words ("global average"): each must appear somewhere in what describes the op.
  const words = q.split(/\s+/).filter(Boolean);
  const text = [name, torchName, op.category.toLowerCase(), ...keywords, (op.help ?? "").toLowerCase()].join(" ");
  if (words.length > 1 && words.every((w) => text.includes(w))) return 7;
  return 9;
}

export function matchOps(ops: OpSchema[], query: string): OpSchema[] {
  const q = query.trim().toLowerCase();
  if (!q) return ops;
  const scored = ops
    .map((op) => ({ op, score: matchScore(op, q) }))
    .filter((s) => s.score < 9);
  scored.sort((a, b) => a.score - b.score || a.op.name.localeCompare(b.op.name));
  return scored.map((s) => s.op);
}

export const Palette = memo(function Palette({
  ops,
  categories,
  disabled,
  onInsert,
  library,
  libraryProblem,
  onPlaceBlock,
}: {
  ops: OpSchema[];
  categories?: string[];
  disabled: boolean;
  onInsert: (op: string) => void;
  /** The team's blocks (null while loading). */
  library?: LibraryBlock[] | null;
  libraryProblem?: string | null;
  onPlaceBlock?: (block: LibraryBlock) => void;
}) {
  const [query, setQuery] = useState("");
  const groups = useMemo(() => {
    const by = new Map<string, OpSchema[]>();
    for (const op of matchOps(ops, query)) by.set(op.category, [...(by.get(op.category) ?? []), op]);
    const order = (c: string) => {
      const i = categories?.indexOf(c) ?? -1;
      return i < 0 ? Number.MAX_SAFE_INTEGER : i;
    };
    // With a query the best match leads; without one, the catalog's category order.
    return query.trim() ? [...by.entries()] : [...by.entries()].sort(([a], [b]) => order(a) - order(b));
  }, [ops, query, categories]);
  const blocks = useMemo(() => {
    const q = query.trim().toLowerCase();
    return (library ?? []).filter((b) => !q || b.name.toLowerCase().includes(q) || (b.description ?? "").toLowerCase().includes(q));
  }, [library, query]);
  return (
    <aside className="palette" aria-label="Operations" data-testid="palette">
      <input className="palette-search" type="search" placeholder="Search ops…" aria-label="Search ops" data-testid="palette-search" value={query} onChange={(e) => setQuery(e.target.value)} />
      <div className="palette-groups">
        {onPlaceBlock && (
          <section className="palette-group" data-testid="palette-blocks">
            <h3>{BLOCK_CATEGORY}</h3>
            {library === null && !libraryProblem && <p className="muted small">Loading…</p>}
            {libraryProblem && <p className="error small">{libraryProblem}</p>}
            {library && library.length === 0 && !query.trim() && <p className="muted small">None yet: select nodes and “Make block…”.</p>}
            <ul>
              {blocks.map((b) => (
                <li key={b.id}>
                  <button
                    type="button"
                    className="palette-item palette-block"
                    data-testid={`palette-block-${b.name}`}
                    title={b.description || `block ${b.name}`}
                    aria-label={`Add block ${b.name} v${b.latest_version}`}
                    disabled={disabled}
                    draggable={!disabled}
                    onDragStart={(e) => {
                      e.dataTransfer.setData(BLOCK_MIME, JSON.stringify({ id: b.id, version: b.latest_version }));
                      e.dataTransfer.effectAllowed = "copy";
                    }}
                    onClick={() => onPlaceBlock(b)}
                  >
                    {b.name} <span className="muted small">v{b.latest_version}</span>
                  </button>
                </li>
              ))}
            </ul>
          </section>
        )}
        {groups.map(([category, items]) => (
          <section key={category} className="palette-group">
            <h3>{category}</h3>
            <ul>
              {items.map((op) => (
                <li key={op.name}>
                  <button
                    type="button"
                    className="palette-item"
                    data-testid={`palette-item-${op.name}`}
                    title={op.torch_name ? `${op.torch_name}: ${op.help}` : op.help}
                    aria-label={`Add ${op.name}`}
                    disabled={disabled}
                    draggable={!disabled}
                    onDragStart={(e) => {
                      e.dataTransfer.setData(OP_MIME, op.name);
                      e.dataTransfer.effectAllowed = "copy";
                    }}
                    onClick={() => onInsert(op.name)}
                  >
                    {op.name}
                  </button>
                </li>
              ))}
            </ul>
          </section>
        ))}
        {groups.length === 0 && <p className="muted">No op matches “{query}”.</p>}
      </div>
    </aside>
  );
});
