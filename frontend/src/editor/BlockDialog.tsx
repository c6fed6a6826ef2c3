// "Make block…": a name, a description, and which inner params the block exposes. Ticking several
// params under one name binds them (conv1.out_channels and conv2.out_channels as `channels`).
import { useState } from "react";
import type { ExposableParam, MakeBlockRequest } from "./blocks";

function formatValue(v: unknown): string {
  return v === undefined || v === null ? "–" : JSON.stringify(v);
}

export function MakeBlockDialog({
  rows,
  selectedCount,
  problem,
  busy,
  onConfirm,
  onCancel,
}: {
  rows: ExposableParam[];
  selectedCount: number;
  problem: string | null;
  busy: boolean;
  onConfirm: (req: MakeBlockRequest) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [ticked, setTicked] = useState<Record<string, boolean>>({});
  const [names, setNames] = useState<Record<string, string>>({});
  const key = (r: ExposableParam) => `${r.node}.${r.param}`;
  const confirm = () => {
    const expose: MakeBlockRequest["expose"] = {};
    for (const r of rows) {
      if (!ticked[key(r)]) continue;
      const as = (names[key(r)] ?? r.param).trim();
      (expose[as] ??= []).push([r.node, r.param]);
    }
    onConfirm({ name: name.trim(), description: description.trim(), expose });
  };
  return (
    <div className="stale-backdrop">
      <form
        className="stale-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="make-block-title"
        data-testid="make-block-dialog"
        style={{ width: "min(620px, 94vw)", maxHeight: "86vh", display: "flex", flexDirection: "column" }}
        onSubmit={(e) => {
          e.preventDefault();
          confirm();
        }}
      >
        <h2 id="make-block-title">Make a block of {selectedCount} nodes</h2>
        <p className="muted small">
          It goes to your team's library and takes the selection's place here. Wires into the selection become its inputs, wires out of it its outputs.
        </p>
        <div className="field">
          <label htmlFor="make-block-name">Name (a Python class name)</label>
          <input id="make-block-name" data-testid="make-block-name" autoFocus placeholder="ResBlock" value={name} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="make-block-description">Description</label>
          <input id="make-block-description" data-testid="make-block-description" value={description} onChange={(e) => setDescription(e.target.value)} />
        </div>
        <p style={{ margin: "8px 0 4px" }}>
          <strong>Parameters it exposes</strong> <span className="muted small">(tick them; the same name on several binds them, the first one's value is the default)</span>
        </p>
        <div style={{ overflowY: "auto", flex: "1 1 auto", border: "1px solid var(--line)", borderRadius: 6, padding: 6 }}>
          {rows.length === 0 && <p className="muted small">The selected nodes have no parameters.</p>}
          <table className="small" style={{ width: "100%", borderCollapse: "collapse" }}>
            <tbody>
              {rows.map((r) => (
                <tr key={key(r)}>
                  <td>
                    <label>
                      <input
                        type="checkbox"
                        data-testid={`expose-${r.node}-${r.param}`}
                        checked={!!ticked[key(r)]}
                        onChange={(e) => setTicked((t) => ({ ...t, [key(r)]: e.target.checked }))}
                      />{" "}
                      {r.node}.{r.param}
                    </label>
                  </td>
                  <td className="muted">{formatValue(r.value)}</td>
                  <td>
                    <input
                      aria-label={`expose ${r.node}.${r.param} as`}
                      data-testid={`expose-as-${r.node}-${r.param}`}
                      disabled={!ticked[key(r)]}
                      value={names[key(r)] ?? r.param}
                      onChange={(e) => setNames((n) => ({ ...n, [key(r)]: e.target.value }))}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {problem && (
          <p className="field-error" role="alert" data-testid="make-block-error">
            {problem}
          </p>
        )}
        <div className="dialog-actions">
          <button type="button" data-testid="make-block-cancel" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className="primary" data-testid="make-block-confirm" disabled={busy || !name.trim()}>
            {busy ? "Making…" : "Make block"}
          </button>
        </div>
      </form>
    </div>
  );
}
