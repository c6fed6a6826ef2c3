// The PyTorch source the engine generates for what is on the canvas (saved or not), read-only.
import { useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import type { GraphSpec } from "../api/types";

export function CodePanel({ spec, specKey }: { spec: GraphSpec; specKey: string }) {
  const [source, setSource] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    const controller = new AbortController();
    const timer = window.setTimeout(() => {
      api
        .codegen(spec, controller.signal)
        .then((r) => {
          setSource(r.source);
          setError(null);
        })
        .catch((e) => !controller.signal.aborted && setError((e as Error).message));
    }, 300);
    return () => {
      window.clearTimeout(timer);
      controller.abort();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [specKey]);

  async function copy() {
    if (!source) return;
    try {
      await navigator.clipboard.writeText(source);
    } catch {
      // Clipboard API needs a secure context; fall back to a hidden textarea.
      const ta = document.createElement("textarea");
      ta.value = source;
      document.body.appendChild(ta);
      ta.select();
      document.execCommand("copy");
      ta.remove();
    }
    setCopied(true);
    window.setTimeout(() => setCopied(false), 1500);
  }

  return (
    <section className="code-panel" data-testid="code-panel" aria-label="Generated Python source">
      <div className="panel-head">
        <h2>model.py</h2>
        <button type="button" data-testid="copy-code" onClick={copy} disabled={!source} aria-label="Copy the source">
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      {error && <p className="error">{error}</p>}
      {!error && source === null && <p className="muted">Generating…</p>}
      {source !== null && (
        <pre className="code" data-testid="code-source" tabIndex={0}>
          <code>{source}</code>
        </pre>
      )}
    </section>
  );
}

export const CODE_WIDTH_KEY = "netloom.canvas.codeWidth";
export const CODE_WIDTH_MIN = 300;
/** What the palette and a usable canvas need beside the code panel. */
const BESIDE_CODE = 200 + 360;

/** The code panel's width kept within what the window allows. */
export function clampCodeWidth(width: number, windowWidth: number): number {
  const max = Math.max(CODE_WIDTH_MIN, windowWidth - BESIDE_CODE);
  return Math.round(Math.min(max, Math.max(CODE_WIDTH_MIN, width)));
}

/** The width the user gave the code panel last time, or null for the page's own. */
export function storedCodeWidth(storage: Pick<Storage, "getItem"> | null, windowWidth: number): number | null {
  const raw = Number(storage?.getItem(CODE_WIDTH_KEY));
  return raw > 0 ? clampCodeWidth(raw, windowWidth) : null;
}

/**
 * The bar between the canvas and the code panel: drag it (or use the arrow keys on it) to widen the
 * panel; the width is kept in localStorage when the drag ends.
 */
export function CodeWidthHandle({
  panel,
  width,
  onWidth,
  onDone,
}: {
  panel: () => HTMLElement | null;
  width: number | null;
  onWidth: (w: number) => void;
  /** Called once the new width is set (the canvas beside it has a new size). */
  onDone?: () => void;
}) {
  const drag = useRef<{ x: number; width: number } | null>(null);
  const current = () => width ?? panel()?.getBoundingClientRect().width ?? CODE_WIDTH_MIN;
  const save = (w: number) => {
    try {
      window.localStorage.setItem(CODE_WIDTH_KEY, String(w));
    } catch {
      // Storage may be off (private mode): the width then lasts for this page only.
    }
  };
  return (
    <div
      className="code-width-handle"
      role="separator"
      aria-orientation="vertical"
      aria-label="Code panel width (drag, or arrow keys)"
      aria-valuenow={Math.round(current())}
      tabIndex={0}
      data-testid="code-width-handle"
      onPointerDown={(e) => {
        e.preventDefault();
        e.currentTarget.setPointerCapture(e.pointerId);
        drag.current = { x: e.clientX, width: current() };
      }}
      onPointerMove={(e) => {
        if (!drag.current) return;
        onWidth(clampCodeWidth(drag.current.width + drag.current.x - e.clientX, window.innerWidth));
      }}
      onPointerUp={(e) => {
        if (!drag.current) return;
        const w = clampCodeWidth(drag.current.width + drag.current.x - e.clientX, window.innerWidth);
        drag.current = null;
        onWidth(w);
        save(w);
        onDone?.();
      }}
      onKeyDown={(e) => {
        if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
        e.preventDefault();
        const w = clampCodeWidth(current() + (e.key === "ArrowLeft" ? 40 : -40), window.innerWidth);
        onWidth(w);
        save(w);
      }}
    />
  );
}
