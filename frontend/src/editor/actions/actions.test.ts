import { describe, expect, it, vi } from "vitest";
import { specToDoc } from "../convert";
import { EditorStore } from "../store";
import { KEY_ACTIONS, actionForKey, isTyping } from ".";
import { copy, cut, paste } from "./clipboard";
import { deleteSelection } from "./deleteSelection";
import { redo, undo } from "./history";
import { setInput, setParam } from "./params";
import { deselect, selectAll } from "./selection";
import type { ActionContext, KeyPress } from "./types";
import { UNSET } from "../paramForm";

const key = (k: string, mods: Partial<KeyPress> = {}): KeyPress => ({ key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods });
const named = (e: KeyPress) => actionForKey(e)?.name;

function context(readOnly = false): ActionContext & { store: EditorStore } {
  const store = new EditorStore(
    specToDoc({
      version: 1,
      inputs: [{ id: "x", shape: [4] }],
      nodes: [
        { id: "linear_1", op: "Linear", params: { out_features: 8 }, inputs: ["x"] },
        { id: "relu_1", op: "ReLU", inputs: ["linear_1"] },
      ],
      outputs: ["relu_1"],
    }),
  );
  const ui = { setPanel: vi.fn(), setInsertAt: vi.fn(), setRefusal: vi.fn(), setMaking: vi.fn(), setBlockProblem: vi.fn(), setShowMinimap: vi.fn() };
  return {
    store, readOnly, ops: new Map(), flow: {} as ActionContext["flow"], canvas: () => null, pointer: () => null, report: null,
    team: 1, library: null, onSave: vi.fn(), onOpenBlock: vi.fn(), onLibraryChange: vi.fn(), ui,
  };
}

const ids = (ctx: ActionContext) => ctx.store.getState().view.nodes.map((n) => n.id);

describe("the editor's keys", () => {
  it("do one action each, as the toolbar's titles say", () => {
    expect(named(key("s", { ctrlKey: true }))).toBe("save");
    expect(named(key("s", { metaKey: true }))).toBe("save");
    expect(named(key("z", { ctrlKey: true }))).toBe("undo");
    expect(named(key("Z", { ctrlKey: true, shiftKey: true }))).toBe("redo");
    expect(named(key("y", { ctrlKey: true }))).toBe("redo");
    expect(named(key("c", { ctrlKey: true }))).toBe("copy");
    expect(named(key("x", { metaKey: true }))).toBe("cut");
    expect(named(key("v", { ctrlKey: true }))).toBe("paste");
    expect(named(key("a", { ctrlKey: true }))).toBe("selectAll");
    expect(named(key("Delete"))).toBe("deleteSelection");
    expect(named(key("Backspace"))).toBe("deleteSelection");
    expect(named(key("/"))).toBe("openInsert");
    expect(named(key("A", { shiftKey: true }))).toBe("openInsert");
    expect(named(key("f"))).toBe("fitView");
    expect(named(key("l"))).toBe("autoLayout");
    expect(named(key("Escape"))).toBe("deselect");
    expect(named(key("Escape", { ctrlKey: true }))).toBe("deselect");
  });

  it("leave other keys to the page", () => {
    expect(named(key("a", { altKey: true }))).toBeUndefined();
    expect(named(key("f", { ctrlKey: true }))).toBeUndefined();
    expect(named(key("Delete", { ctrlKey: true }))).toBeUndefined();
    expect(named(key("q"))).toBeUndefined();
  });

  it("work in a text field only for saving", () => {
    expect(KEY_ACTIONS.filter((a) => a.whileTyping).map((a) => a.name)).toEqual(["save"]);
    expect(isTyping({ tagName: "INPUT" } as unknown as EventTarget)).toBe(true);
    expect(isTyping({ tagName: "DIV", isContentEditable: true } as unknown as EventTarget)).toBe(true);
    expect(isTyping({ tagName: "DIV", isContentEditable: false } as unknown as EventTarget)).toBe(false);
    expect(isTyping(null)).toBe(false);
  });
});

describe("the editor's actions", () => {
  it("select all and none", () => {
    const ctx = context();
    selectAll.perform(ctx);
    expect(ctx.store.selectedIds().size).toBe(4);
    deselect.perform(ctx);
    expect(ctx.store.selectedIds().size).toBe(0);
  });

  it("cut, paste a step further each time, and undo", () => {
    const ctx = context();
    ctx.store.select(new Set(["relu_1"]));
    cut.perform(ctx);
    expect(ids(ctx)).not.toContain("relu_1");
    paste.perform(ctx);
    paste.perform(ctx);
    const pasted = ctx.store.getState().view.nodes.filter((n) => n.data.kind === "op" && n.id.startsWith("relu"));
    expect(pasted.map((n) => n.id)).toEqual(["relu_1", "relu_2"]);
    expect(pasted[1].position.x - pasted[0].position.x).toBe(40);
    undo.perform(ctx);
    expect(ids(ctx)).not.toContain("relu_2");
    redo.perform(ctx);
    expect(ids(ctx)).toContain("relu_2");
  });

  it("change nothing on a read-only canvas", () => {
    const ctx = context(true);
    selectAll.perform(ctx);
    copy.perform(ctx);
    deleteSelection.perform(ctx);
    paste.perform(ctx);
    expect(ids(ctx)).toEqual(["x", "linear_1", "relu_1", "out:1"]);
  });

  it("set and unset a parameter, and an input's shape, each visit of a field one undo step", () => {
    const ctx = context();
    const params = () => ctx.store.getState().view.nodes.find((n) => n.id === "linear_1")!.data;
    setParam.perform(ctx, { nodeId: "linear_1", name: "out_features", value: 1, visit: 1 });
    setParam.perform(ctx, { nodeId: "linear_1", name: "out_features", value: 16, visit: 1 });
    setParam.perform(ctx, { nodeId: "linear_1", name: "bias", value: false, visit: 2 });
    expect(params()).toMatchObject({ params: { out_features: 16, bias: false } });
    undo.perform(ctx);
    expect(params()).toMatchObject({ params: { out_features: 16 } });
    undo.perform(ctx);
    expect(params()).toMatchObject({ params: { out_features: 8 } });
    setParam.perform(ctx, { nodeId: "linear_1", name: "out_features", value: UNSET, visit: 3 });
    expect(params()).toMatchObject({ params: {} });
    setInput.perform(ctx, { nodeId: "x", patch: { shape: [1, 8, 8] }, visit: 4 });
    expect(ctx.store.getState().view.nodes.find((n) => n.id === "x")!.data).toMatchObject({ shape: [1, 8, 8] });
  });
});
