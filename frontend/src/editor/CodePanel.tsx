// The PyTorch source the engine generates for what is on the canvas (saved or not), read-only.
import { useEffect, useState } from "react";
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
