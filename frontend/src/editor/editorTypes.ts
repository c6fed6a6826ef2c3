// What the editor and the page around it say to each other about a block's body open for editing.
import type { GraphSpec } from "../api/types";
import type { BlockSpec } from "./blocks";

/** The tab shown beside the canvas. */
export type SidePanel = "inspector" | "revisions" | "code";

/** What "Open block" hands the page: the definition an instance pins, and what its body needs to be checked. */
export interface OpenBlock {
  instance: string;
  block: BlockSpec;
  dependencies: BlockSpec[];
  /** The shape each block input receives at this instance (null: not known yet). */
  inputShapes: (number[] | null)[];
  /** The instance's param values, so the body is checked as this instance builds it. */
  values: Record<string, unknown>;
}

/** The editor showing a block's body instead of a graph. */
export interface BlockMode {
  title: string;
  /** The body spec as the validator sees it (block params bound to the instance's values). */
  checkSpec: (spec: GraphSpec) => GraphSpec;
  canSave: boolean;
  saving: boolean;
  problem: string | null;
  onSaveVersion: () => void;
  onClose: () => void;
}
