// The inspector's edits: an op node's parameter set (or unset), a graph input's shape or dtype.
// Typing into one field coalesces into one undo step per visit of the field.
import { UNSET } from "../paramForm";
import type { EditorAction } from "./types";

export interface SetParam {
  nodeId: string;
  name: string;
  value: unknown | typeof UNSET;
  visit: number;
}

export const setParam: EditorAction<SetParam> = {
  name: "setParam",
  perform: ({ store }, { nodeId, name, value, visit }) =>
    store.edit(
      (d) => ({
        ...d,
        nodes: d.nodes.map((n) => {
          if (n.id !== nodeId || n.type !== "op") return n;
          const params = { ...(n.data.params ?? {}) };
          if (value === UNSET) delete params[name];
          else params[name] = value;
          return { ...n, data: { ...n.data, params } };
        }),
      }),
      `${nodeId}.${name}#${visit}`,
    ),
};

export interface SetInput {
  nodeId: string;
  patch: { shape?: number[]; dtype?: string };
  visit: number;
}

export const setInput: EditorAction<SetInput> = {
  name: "setInput",
  perform: ({ store }, { nodeId, patch, visit }) =>
    store.edit(
      (d) => ({ ...d, nodes: d.nodes.map((n) => (n.id === nodeId && n.type === "input" ? { ...n, data: { ...n.data, ...patch } } : n)) }),
      `${nodeId}.${Object.keys(patch).join(",")}#${visit}`,
    ),
};
