// Search-and-insert at the pointer (double-click the canvas, or press "/" or "a").
import { useEffect, useMemo, useRef, useState } from "react";
import type { OpSchema } from "../api/types";
import { matchOps } from "./Palette";

export function InsertBox({ ops, at, onPick, onClose }: { ops: OpSchema[]; at: { x: number; y: number }; onPick: (op: string) => void; onClose: () => void }) {
  const [query, setQuery] = useState("");
  const [active, setActive] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const matches = useMemo(() => matchOps(ops, query).slice(0, 12), [ops, query]);
  useEffect(() => input.current?.focus(), []);
  useEffect(() => setActive(0), [query]);
  return (
    <div className="insert-box nodrag" style={{ left: at.x, top: at.y }} data-testid="insert-box" role="dialog" aria-label="Insert an op">
      <input
        ref={input}
        aria-label="Op to insert"
        placeholder="Type an op…"
        data-testid="insert-search"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        onBlur={() => window.setTimeout(onClose, 150)}
        onKeyDown={(e) => {
          if (e.key === "Escape") onClose();
          else if (e.key === "ArrowDown") setActive((a) => Math.min(a + 1, matches.length - 1));
          else if (e.key === "ArrowUp") setActive((a) => Math.max(a - 1, 0));
          else if (e.key === "Enter" && matches[active]) onPick(matches[active].name);
          else return;
          e.preventDefault();
          e.stopPropagation();
        }}
      />
      <ul role="listbox">
        {matches.map((op, i) => (
          <li
            key={op.name}
            role="option"
            aria-selected={i === active}
            className={i === active ? "active" : undefined}
            data-testid={`insert-item-${op.name}`}
            onMouseDown={(e) => {
              e.preventDefault();
              onPick(op.name);
            }}
          >
            <span>{op.name}</span>
            <span className="muted">{op.category}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
