// A block from the team library on the canvas: placed (from the palette, or dropped), upgraded to
// another version, or opened to edit its body.
import { blocksApi, definitionOf } from "../blockLibrary";
import { blocksByRef, docBlocks, parseBlockRef, placeInstance, upgradeInstances, usedBlocks } from "../blocks";
import { NODE_HEIGHT, NODE_WIDTH, handleIndex } from "../model";
import { canvasPoint, messageOf } from "./shared";
import type { EditorAction, Point } from "./types";

export interface PlaceBlock {
  id: number;
  version: number;
  name: string;
  /** Where its middle goes on the screen (default: the middle of the canvas). */
  screen?: Point;
}

export const placeBlock: EditorAction<PlaceBlock, Promise<void>> = {
  name: "placeBlock",
  perform: async (ctx, { id, version, name, screen }) => {
    if (ctx.readOnly) return;
    const position = ctx.flow.screenToFlowPosition(screen ?? canvasPoint(ctx));
    const corner = { x: position.x - NODE_WIDTH / 2, y: position.y - NODE_HEIGHT / 2 };
    try {
      const v = await blocksApi.version(id, version);
      ctx.store.edit((d) => placeInstance(d, definitionOf(v, name), v.dependencies ?? [], corner).doc);
      ctx.ui.setBlockProblem(null);
      ctx.ui.setPanel("inspector");
    } catch (e) {
      ctx.ui.setBlockProblem(`Could not place ${name} v${version}: ${messageOf(e)}`);
    }
  },
};

export const upgradeBlock: EditorAction<{ nodeId: string; version: number }, Promise<void>> = {
  name: "upgradeBlock",
  perform: async ({ store, library, ui }, { nodeId, version }) => {
    const node = store.getState().view.nodes.find((n) => n.id === nodeId);
    const ref = node?.type === "op" ? parseBlockRef(node.data.op) : null;
    const lib = ref ? library?.find((b) => b.name === ref.name) : undefined;
    if (!ref || !lib) return;
    try {
      const v = await blocksApi.version(lib.id, version);
      store.edit((d) => upgradeInstances(d, definitionOf(v, lib.name), v.dependencies ?? [], [nodeId]));
      ui.setBlockProblem(null);
    } catch (e) {
      ui.setBlockProblem(`Could not upgrade ${nodeId}: ${messageOf(e)}`);
    }
  },
};

/** Hands the page the definition an instance pins, with the shapes its inputs receive here. */
export const openBlock: EditorAction<string> = {
  name: "openBlock",
  perform: ({ store, report, ui, onOpenBlock }, nodeId) => {
    const view = store.getState().view;
    const node = view.nodes.find((n) => n.id === nodeId);
    if (node?.type !== "op") return;
    const all = docBlocks(view);
    const block = blocksByRef(all).get(node.data.op);
    if (!block) {
      ui.setBlockProblem(`The definition of ${node.data.op} is not in this graph.`);
      return;
    }
    // Each block input receives what the wire into that slot carries.
    const inputShapes = block.inputs.map((_, k) => {
      const e = view.edges.find((x) => x.target === nodeId && handleIndex(x.targetHandle) === k);
      if (!e) return null;
      const info = report?.nodes[e.source];
      const port = /^out(\d+)$/.exec(e.sourceHandle ?? "");
      return (port ? info?.ports?.[Number(port[1])] : info?.shape) ?? null;
    });
    onOpenBlock({
      instance: nodeId,
      block,
      dependencies: usedBlocks(block.nodes, all),
      inputShapes,
      values: { ...(node.data.params ?? {}) },
    });
  },
};
