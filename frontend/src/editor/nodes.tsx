// One memoised component per node kind; `nodeTypes` lives at module scope so React Flow never remounts them.
import { Handle, type NodeProps, type NodeTypes, Position, useNodeConnections, useUpdateNodeInternals } from "@xyflow/react";
import { memo, useEffect, useMemo, useRef } from "react";
import { formatCount, formatShape } from "../format";
import { innerPath } from "./blockBody";
import { isParamRef, parseBlockRef } from "./blocks";
import { inputSlotCount, outputPortCount, reportPorts } from "./connect";
import { useCheck, useOps } from "./context";
import { handleIndex, type InputNode, type OpNode, type OutputNode } from "./model";

function ErrorList({ id }: { id: string }) {
  const errors = useCheck().errorsByNode.get(id);
  if (!errors?.length) return null;
  return (
    <ul className="node-errors" data-testid={`node-errors-${id}`} role="alert">
      {errors.map((e, i) => {
        // A problem inside a block instance names the inner node it sits on (path: instance first).
        const inner = innerPath(e as { path?: unknown });
        const text = e.field && !e.message.includes(e.field) ? `${e.field}: ${e.message}` : e.message;
        return (
          <li key={i}>
            {inner && !e.message.includes(`node ${inner.split(" › ").pop()}`) && <strong className="node-error-path">{inner}: </strong>}
            {text}
          </li>
        );
      })}
    </ul>
  );
}

function keyParams(params: Record<string, unknown> | undefined): string {
  if (!params) return "";
  return Object.entries(params)
    .slice(0, 3)
    .map(([k, v]) => `${k}=${isParamRef(v) ? `‹${v.$param}›` : Array.isArray(v) ? `(${v.map((x) => (x === null ? "None" : String(x))).join(",")})` : String(v)}`)
    .join("  ");
}

function TargetHandles({ id, count }: { id: string; count: number }) {
  return (
    <>
      {Array.from({ length: count }, (_, i) => (
        <Handle
          key={i}
          type="target"
          id={`in${i}`}
          position={Position.Top}
          style={{ left: `${((i + 1) / (count + 1)) * 100}%` }}
          data-testid={`handle-in-${id}-${i}`}
          title={count > 1 ? `input ${i + 1}` : "input"}
        />
      ))}
    </>
  );
}

/** One source handle per output port ("out0", "out1", ...) along the bottom, each with its index and shape. */
function SourcePorts({ id, count, shapes }: { id: string; count: number; shapes: number[][] | null }) {
  return (
    <>
      {Array.from({ length: count }, (_, k) => (
        <Handle
          key={k}
          type="source"
          id={`out${k}`}
          position={Position.Bottom}
          className="port-handle"
          style={{ left: `${((k + 1) / (count + 1)) * 100}%` }}
          data-testid={`handle-out-${id}-${k}`}
          title={`${id}:${k}${shapes?.[k] ? ` ${formatShape(shapes[k])}` : ""}`}
        >
          {/* Inline: the stylesheet is shared; the index sits just under the handle. */}
          <span className="port-label" style={{ position: "absolute", top: 9, left: "50%", transform: "translateX(-50%)", fontSize: 9, lineHeight: 1, color: "#3b4656", pointerEvents: "none" }}>
            {k}
          </span>
        </Handle>
      ))}
    </>
  );
}

// Inline: the shared stylesheet is not the editor's; a block stands out by its border and badge.
const BLOCK_NODE_STYLE: React.CSSProperties = { borderColor: "#7c4dcc", borderWidth: 2, boxShadow: "3px 3px 0 #d9ccf2" };
const BLOCK_BADGE_STYLE: React.CSSProperties = { background: "#7c4dcc", color: "#fff", borderRadius: 3, padding: "0 4px", fontSize: 10, fontWeight: 600, textTransform: "uppercase" };

export const OpNodeView = memo(function OpNodeView({ id, data, selected }: NodeProps<OpNode>) {
  const op = useOps().get(data.op);
  const check = useCheck();
  const info = check.report?.nodes[id];
  const connections = useNodeConnections({ handleType: "target" });
  const used = useMemo(() => connections.map((c) => handleIndex(c.targetHandle)), [connections]);
  const slots = inputSlotCount(op, used);
  const outgoing = useNodeConnections({ handleType: "source" });
  const ports = reportPorts(info);
  const usedPorts = useMemo(() => outgoing.map((c) => c.sourceHandle ?? "out"), [outgoing]);
  // A block instance shows all its outputs before the first check says how many ports there are.
  const blockOutputs = (op as { block_outputs?: number } | undefined)?.block_outputs ?? 0;
  const portCount = op?.multi_output ? Math.max(outputPortCount(ports, usedPorts), blockOutputs) : 0;
  const updateInternals = useUpdateNodeInternals();
  // React Flow measures handles on mount; re-measure only when the number of input slots or output
  // ports changes (doing it on mount too costs a store update per node: seconds for a 200-node graph).
  const shownHandles = useRef(`${slots}/${portCount}`);
  useEffect(() => {
    const handles = `${slots}/${portCount}`;
    if (shownHandles.current === handles) return;
    shownHandles.current = handles;
    updateInternals(id);
  }, [id, slots, portCount, updateInternals]);
  const hasErrors = (check.errorsByNode.get(id)?.length ?? 0) > 0;
  // A block instance (op "Name@v"): a badge and "Name v1" instead of the op name, one handle per block input.
  const block = parseBlockRef(data.op);
  return (
    <div
      className={`node op-node${block ? " block-node" : ""}${hasErrors ? " has-errors" : ""}${selected ? " selected" : ""}`}
      data-testid={`node-${id}`}
      data-op={data.op}
      title={op?.help}
      style={block ? BLOCK_NODE_STYLE : undefined}
    >
      <TargetHandles id={id} count={slots} />
      <div className="node-head">
        {block ? (
          <span className="node-op" data-testid={`block-title-${id}`}>
            <span className="block-badge" style={BLOCK_BADGE_STYLE}>
              block
            </span>{" "}
            {block.name} v{block.version}
          </span>
        ) : (
          <span className="node-op">{data.op}</span>
        )}
        <span className="node-id">{id}</span>
      </div>
      <div className="node-params">{keyParams(data.params)}</div>
      <div className="node-foot">
        <span className="node-shape" data-testid={`node-shape-${id}`}>
          {ports ? ports.map((p) => formatShape(p)).join(" · ") : formatShape(info?.shape)}
        </span>
        {info && info.params > 0 && <span className="node-count" data-testid={`node-params-${id}`}>{formatCount(info.params)} params</span>}
      </div>
      <ErrorList id={id} />
      {op?.multi_output ? (
        <SourcePorts id={id} count={portCount} shapes={ports} />
      ) : (
        <Handle type="source" id="out" position={Position.Bottom} data-testid={`handle-out-${id}`} title="output" />
      )}
    </div>
  );
});

export const InputNodeView = memo(function InputNodeView({ id, data, selected }: NodeProps<InputNode>) {
  return (
    <div className={`node io-node input-node${selected ? " selected" : ""}`} data-testid={`node-${id}`}>
      <div className="node-head">
        <span className="node-op">Input</span>
        <span className="node-id">{id}</span>
      </div>
      <div className="node-foot">
        <span className="node-shape" data-testid={`node-shape-${id}`}>
          {formatShape(data.shape)}
        </span>
        <span className="node-count">{data.dtype ?? "float32"}</span>
      </div>
      <ErrorList id={id} />
      <Handle type="source" id="out" position={Position.Bottom} data-testid={`handle-out-${id}`} title="output" />
    </div>
  );
});

export const OutputNodeView = memo(function OutputNodeView({ id, selected }: NodeProps<OutputNode>) {
  const connections = useNodeConnections({ handleType: "target" });
  const source = connections[0]?.source;
  const shape = useCheck().report?.nodes[source ?? ""]?.shape;
  const key = id.replace(":", "-");
  return (
    <div className={`node io-node output-node${selected ? " selected" : ""}`} data-testid={`node-${key}`}>
      <Handle type="target" id="in0" position={Position.Top} data-testid={`handle-in-${key}-0`} title="input" />
      <div className="node-head">
        <span className="node-op">Output</span>
        <span className="node-id">{source ?? "not wired"}</span>
      </div>
      <div className="node-foot">
        <span className="node-shape">{source ? formatShape(shape) : "wire a node here"}</span>
      </div>
    </div>
  );
});

export const nodeTypes: NodeTypes = {
  op: OpNodeView,
  input: InputNodeView,
  output: OutputNodeView,
};
