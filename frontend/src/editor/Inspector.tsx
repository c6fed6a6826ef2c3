// The selected node's form, generated from its op schema and checked as the user types.
import { memo, useEffect, useState } from "react";
import type { OpSchema, ParamSchema, ValidationError } from "../api/types";
import { formatCount, formatShape } from "../format";
import { type LibraryBlock, newerVersion } from "./blockLibrary";
import { isParamRef, parseBlockRef } from "./blocks";
import { EditingNotes } from "./collab/PresenceUi";
import { usePresence } from "./collab/presence";
import { useCheck } from "./context";
import type { CanvasNode, InputNode, OpNode } from "./model";
import { type FieldModel, type SizeMode, UNSET, fieldFor, formatValue, parseParam, sizeModeOf, sizeParts, sizeTextFor } from "./paramForm";

export interface InspectorActions {
  setParam: (nodeId: string, name: string, value: unknown | typeof UNSET, visit: number) => void;
  setInput: (nodeId: string, patch: { shape?: number[]; dtype?: string }, visit: number) => void;
}

/** What the Inspector offers on a block instance: the team library, upgrade and open. */
export interface BlockActions {
  library: LibraryBlock[] | null;
  upgrade: (nodeId: string, version: number) => void;
  open: (nodeId: string) => void;
  /** An error of the last upgrade or open, shown under the buttons. */
  problem: string | null;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function ParamField({
  nodeId,
  param,
  value,
  serverErrors,
  readOnly,
  onValue,
}: {
  nodeId: string;
  param: ParamSchema;
  value: unknown;
  serverErrors: ValidationError[];
  readOnly: boolean;
  onValue: (v: unknown, visit: number) => void;
}) {
  const field = fieldFor(param);
  const [text, setText] = useState(() => formatValue(param, value));
  const [error, setError] = useState<string | null>(null);
  // Each visit to the field is one undo step, however many keys it takes.
  const [visit, setVisit] = useState(0);

  // Undo, redo or a restore changed the value underneath: show it unless the text already means it.
  useEffect(() => {
    const r = parseParam(param, text);
    const current = r.value === UNSET ? undefined : r.ok || r.value !== undefined ? r.value : Symbol("unparsed");
    if (!sameValue(current, value)) {
      setText(formatValue(param, value));
      setError(null);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [value]);

  const inputId = `param-${nodeId}-${param.name}`;
  const change = (raw: string | boolean) => {
    if (typeof raw === "string") setText(raw);
    const r = parseParam(param, raw);
    if (r.ok) {
      setError(null);
      onValue(r.value, visit);
    } else {
      setError(r.error);
      if (r.value !== undefined) onValue(r.value, visit);
    }
  };
  const message = error ?? serverErrors.map((e) => e.message).join("; ");
  const common = {
    id: inputId,
    className: `nodrag${message ? " invalid" : ""}`,
    "data-testid": `param-${param.name}`,
    "aria-invalid": !!message,
    "aria-describedby": `${inputId}-help`,
    disabled: readOnly,
    onFocus: () => setVisit((v) => v + 1),
  };
  return (
    <div className="field" data-param={param.name}>
      <label htmlFor={inputId}>
        {field.label}
        {field.required && <span aria-label="required"> *</span>}
      </label>
      {field.kind === "size" ? (
        <SizeInputs field={field} param={param} text={text} value={value} common={common} onText={change} />
      ) : field.kind === "checkbox" ? (
        <input {...common} type="checkbox" checked={value === undefined ? !!param.default : !!value} onChange={(e) => change(e.target.checked)} />
      ) : field.kind === "select" ? (
        <select {...common} value={text} onChange={(e) => change(e.target.value)}>
          {!field.required && <option value="">default{field.placeholder ? ` (${field.placeholder})` : ""}</option>}
          {field.required && text === "" && <option value="">choose…</option>}
          {field.choices!.map((c) => (
            <option key={c.value} value={c.value}>
              {c.label}
            </option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          type="text"
          inputMode={field.kind === "number" ? (param.type === "int" ? "numeric" : "decimal") : undefined}
          placeholder={field.placeholder}
          value={text}
          onChange={(e) => change(e.target.value)}
        />
      )}
      {message && (
        <p className="field-error" role="alert" data-testid={`param-error-${param.name}`}>
          {message}
        </p>
      )}
      <p className="help" id={`${inputId}-help`}>
        {field.help}
        {field.kind === "number" && (field.min !== undefined || field.max !== undefined) && (
          <span className="bounds">
            {" "}
            ({field.min !== undefined ? `≥ ${field.min}` : ""}
            {field.min !== undefined && field.max !== undefined && field.max < 2 ** 31 - 1 ? ", " : ""}
            {field.max !== undefined && field.max < 2 ** 31 - 1 ? `≤ ${field.max}` : ""})
          </span>
        )}
      </p>
    </div>
  );
}

/**
 * PyTorch's "int or tuple" (`kernel_size=3` or `(3, 1)`; `padding="same"`): a choice of one number for
 * every dimension, one number per dimension, or a word, then the matching boxes.
 */
function SizeInputs({
  field,
  param,
  text,
  value,
  common,
  onText,
}: {
  field: FieldModel;
  param: ParamSchema;
  text: string;
  value: unknown;
  common: { id: string; className: string; "data-testid": string; "aria-invalid": boolean; "aria-describedby": string; disabled: boolean; onFocus: () => void };
  onText: (raw: string) => void;
}) {
  const [mode, setMode] = useState<SizeMode>(() => (text === "" ? sizeModeOf(param, value) : sizeModeOf(param, parseParam(param, text).value)));
  // Undo or a restore may change the value underneath: follow it when it no longer fits the mode
  // (a word, a number, a complete tuple), but not while a tuple is half typed into one box.
  useEffect(() => {
    const next = sizeModeOf(param, value);
    const complete = Array.isArray(value) && (field.dims == null || value.length === field.dims);
    if (next.mode === "word" || mode.mode === "word" || next.mode === "one" || complete) setMode(next);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [value]);
  const perDimension = field.dims ?? null;
  const pick = (choice: string) => {
    const next: SizeMode = choice === "one" ? { mode: "one" } : choice === "each" ? { mode: "each" } : { mode: "word", word: choice };
    setMode(next);
    onText(sizeTextFor(param, next, text));
  };
  const modeValue = mode.mode === "word" ? mode.word : mode.mode;
  const parts = sizeParts(param, text);
  const inputMode = "numeric" as const;
  return (
    <div className="size-field" role="group" aria-label={field.label} style={{ display: "flex", gap: 4, flexWrap: "wrap" }}>
      <select className="nodrag" data-testid={`${common["data-testid"]}-mode`} aria-label={`${field.label}: how`} disabled={common.disabled} value={modeValue} onFocus={common.onFocus} onChange={(e) => pick(e.target.value)}>
        <option value="one">one number</option>
        <option value="each">{perDimension ? `one per dimension (${perDimension})` : "a list"}</option>
        {(field.words ?? []).map((w) => (
          <option key={w} value={w}>
            {w}
          </option>
        ))}
      </select>
      {mode.mode === "one" && <input {...common} type="text" inputMode={inputMode} placeholder={field.placeholder} value={text} onChange={(e) => onText(e.target.value)} />}
      {mode.mode === "each" && perDimension === null && (
        <input {...common} type="text" placeholder="e.g. 2, 3" value={text} onChange={(e) => onText(e.target.value)} />
      )}
      {mode.mode === "each" &&
        perDimension !== null &&
        parts.map((part, i) => (
          <input
            key={i}
            {...common}
            id={i === 0 ? common.id : `${common.id}-${i}`}
            data-testid={`${common["data-testid"]}-${i}`}
            aria-label={`${field.label} ${i + 1} of ${perDimension}`}
            className={`${common.className} size-part`}
            style={{ width: `${Math.floor(100 / perDimension) - 4}%`, minWidth: 36 }}
            type="text"
            inputMode={field.itemNullable ? "text" : inputMode}
            placeholder={field.itemNullable ? "null" : ""}
            value={part}
            onChange={(e) => onText(parts.map((p, k) => (k === i ? e.target.value.trim() || (field.itemNullable ? "null" : "") : p || (field.itemNullable ? "null" : ""))).join(", "))}
          />
        ))}
    </div>
  );
}

function InputForm({ node, readOnly, actions }: { node: InputNode; readOnly: boolean; actions: InspectorActions }) {
  const shapeParam: ParamSchema = { name: "shape", type: "int_list", min: 1, min_items: 1, max_items: 8, required: true, help: "per-sample shape; the batch dimension is implicit" };
  const dtypeParam: ParamSchema = { name: "dtype", type: "choice", choices: ["float32", "int64"], required: true, help: "int64 for token ids" };
  return (
    <>
      <ParamField nodeId={node.id} param={shapeParam} value={node.data.shape} serverErrors={[]} readOnly={readOnly} onValue={(v, visit) => actions.setInput(node.id, { shape: v as number[] }, visit)} />
      <ParamField nodeId={node.id} param={dtypeParam} value={node.data.dtype ?? "float32"} serverErrors={[]} readOnly={readOnly} onValue={(v, visit) => actions.setInput(node.id, { dtype: v as string }, visit)} />
    </>
  );
}

function OpForm({ node, op, readOnly, actions }: { node: OpNode; op: OpSchema | undefined; readOnly: boolean; actions: InspectorActions }) {
  const errors = useCheck().errorsByNode.get(node.id) ?? [];
  if (!op) return <p className="error">Unknown op “{node.data.op}”: it is not in the server's catalog.</p>;
  if (op.params.length === 0) return <p className="muted">{op.name} has no parameters.</p>;
  return (
    <>
      {op.params.map((p) => {
        const value = node.data.params?.[p.name];
        // Inside a block's body: the param follows a block parameter, set on each instance.
        if (isParamRef(value))
          return (
            <div className="field" key={`${node.id}.${p.name}`} data-testid={`param-bound-${p.name}`}>
              <label>{p.name.replace(/_/g, " ")}</label>
              <p className="muted small">
                set by the block parameter <strong>{value.$param}</strong> of each instance
              </p>
            </div>
          );
        return (
          <ParamField
            key={`${node.id}.${p.name}`}
            nodeId={node.id}
            param={p}
            value={node.data.params?.[p.name]}
            serverErrors={errors.filter((e) => e.field === p.name)}
            readOnly={readOnly}
            onValue={(v, visit) => actions.setParam(node.id, p.name, v, visit)}
          />
        );
      })}
    </>
  );
}

export const Inspector = memo(function Inspector({
  selected,
  ops,
  readOnly,
  actions,
  blockActions,
  onMakeBlock,
}: {
  selected: CanvasNode[];
  ops: Map<string, OpSchema>;
  readOnly: boolean;
  actions: InspectorActions;
  blockActions?: BlockActions;
  onMakeBlock?: () => void;
}) {
  const check = useCheck();
  const presence = usePresence();
  if (selected.length === 0)
    return readOnly ? (
      <div className="inspector-empty muted">
        <p>Select a node to see its parameters.</p>
        <p>You can look at this graph but not change it: your role in this team is viewer.</p>
      </div>
    ) : (
      <div className="inspector-empty muted">
        <p>Select a node to edit its parameters.</p>
        <p>Drag an op from the palette, or double-click the canvas (or press “/”) to insert one.</p>
      </div>
    );
  if (selected.length > 1)
    return (
      <div className="inspector-empty">
        <p className="muted">{selected.length} nodes selected. Ctrl-C copies them, Delete removes them.</p>
        {onMakeBlock && !readOnly && (
          <button type="button" data-testid="inspector-make-block" onClick={onMakeBlock}>
            Make block…
          </button>
        )}
      </div>
    );
  const node = selected[0];
  const info = check.report?.nodes[node.id];
  const nodeErrors = (check.errorsByNode.get(node.id) ?? []).filter((e) => !e.field || node.type !== "op" || !ops.get(node.data.op)?.params.some((p) => p.name === e.field));
  const block = node.type === "op" ? parseBlockRef(node.data.op) : null;
  const title = block ? `Block ${block.name} v${block.version}` : node.type === "op" ? node.data.op : node.type === "input" ? "Input" : "Output";
  const newer = block && node.type === "op" && blockActions?.library ? newerVersion(blockActions.library, node.data.op) : null;
  const inLibrary = !!block && !!blockActions?.library?.some((b) => b.name === block.name);
  return (
    <form
      className="inspector-form"
      data-testid="inspector"
      aria-label={`Parameters of ${node.id}`}
      onSubmit={(e) => e.preventDefault()}
      // On a shared canvas the others see which field this person is typing in.
      onFocus={(e) => {
        const param = (e.target as HTMLElement).closest<HTMLElement>("[data-param]")?.dataset.param;
        presence?.set("editing", param ? { node: node.id, param } : null);
      }}
      onBlur={() => presence?.set("editing", null)}
    >
      <h2>
        {title} <span className="node-id">{node.type === "output" ? "" : node.id}</span>
      </h2>
      {presence && <EditingNotes peers={presence.peers} node={node.id} />}
      {node.type === "op" && ops.get(node.data.op)?.help && <p className="help">{ops.get(node.data.op)!.help}</p>}
      {info?.shape && (
        <p className="inspector-info">
          output <strong data-testid="inspector-shape">{formatShape(info.shape)}</strong>
          {info.params > 0 && <> · {formatCount(info.params)} parameters</>}
        </p>
      )}
      {nodeErrors.map((e, i) => (
        <p key={i} className="field-error" role="alert">
          {e.message}
        </p>
      ))}
      {node.type === "op" && <OpForm node={node} op={ops.get(node.data.op)} readOnly={readOnly} actions={actions} />}
      {block && blockActions && (
        <div className="block-actions" data-testid="block-actions" style={{ display: "flex", flexWrap: "wrap", gap: 6, marginTop: 10 }}>
          {newer && !readOnly && (
            <button type="button" data-testid="block-upgrade" onClick={() => blockActions.upgrade(node.id, newer.version)}>
              Upgrade to v{newer.version}
            </button>
          )}
          <button type="button" data-testid="block-open" onClick={() => blockActions.open(node.id)}>
            Open block
          </button>
          {blockActions.library && !inLibrary && <p className="muted small">This block is not in your team's library; its definition travels with the graph.</p>}
          {blockActions.problem && (
            <p className="field-error" role="alert">
              {blockActions.problem}
            </p>
          )}
        </div>
      )}
      {node.type === "input" && <InputForm node={node} readOnly={readOnly} actions={actions} />}
      {node.type === "output" && <p className="muted">Wire the node whose value the model returns into this output.</p>}
    </form>
  );
});
