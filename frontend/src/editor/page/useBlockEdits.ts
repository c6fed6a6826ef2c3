// Blocks on the page: the team library, the stack of block bodies open for editing (each on top of
// the graph or of the body it was opened from), saving a body as a new version, and the offer to
// move the instances below to it.
import { useCallback, useEffect, useMemo, useState } from "react";
import type { ApiError } from "../../api/client";
import type { GraphSpec } from "../../api/types";
import { bindParams, blockToSpec, specToBlock } from "../blockBody";
import { type LibraryBlock, blocksApi, definitionOf } from "../blockLibrary";
import { type BlockSpec, upgradeInstances, withBlockDefaults } from "../blocks";
import { docToSpec, specToDoc } from "../convert";
import type { BlockMode, OpenBlock } from "../editorTypes";
import { EditorStore } from "../store";

/** A block's body open for editing. */
export interface BlockEdit {
  open: OpenBlock;
  store: EditorStore;
  saving: boolean;
  problem: string | null;
}

/** A block version just saved: the canvas below offers to move its instances to it. */
export interface UpgradeOffer {
  library: LibraryBlock;
  version: number;
}

/** The team's block library (blocks of other teams left out); `refresh` asks again. */
export function useBlockLibrary(team: number | null): { library: LibraryBlock[] | null; problem: string | null; refresh: () => void } {
  const [library, setLibrary] = useState<LibraryBlock[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const refresh = useCallback(() => {
    if (team === null) return;
    blocksApi
      .list(team)
      .then((blocks) => {
        setLibrary(blocks.filter((b) => b.team === undefined || b.team === team));
        setProblem(null);
      })
      .catch((e) => setProblem(`Team blocks: ${(e as Error).message}`));
  }, [team]);
  useEffect(() => refresh(), [refresh]);
  return { library, problem, refresh };
}

export interface BlockEdits {
  /** How many bodies are open (the editor of the top one is keyed by it). */
  depth: number;
  /** The body shown, if any. */
  top: BlockEdit | null;
  /** What the editor shows while a body is open. */
  blockMode: BlockMode | undefined;
  open: (open: OpenBlock) => void;
  offer: UpgradeOffer | null;
  /** The store the upgrade offer applies to: the body below the one just saved, or the graph. */
  offerStore: EditorStore | null;
  acceptOffer: () => Promise<void>;
  dismissOffer: () => void;
}

export function useBlockEdits(
  graphStore: EditorStore | null,
  library: LibraryBlock[] | null,
  refreshLibrary: () => void,
  onError: (message: string) => void,
): BlockEdits {
  const [edits, setEdits] = useState<BlockEdit[]>([]);
  const [offer, setOffer] = useState<UpgradeOffer | null>(null);
  const top = edits.length ? edits[edits.length - 1] : null;

  const open = useCallback((o: OpenBlock) => {
    const body = blockToSpec(o.block, o.inputShapes, o.dependencies);
    setOffer(null);
    setEdits((all) => [...all, { open: o, store: new EditorStore(specToDoc(body as GraphSpec)), saving: false, problem: null }]);
  }, []);

  const close = useCallback(() => {
    if (!top) return;
    if (top.store.getState().canUndo && !window.confirm(`Leave the body of ${top.open.block.name}? Its changes are not saved as a version.`)) return;
    setEdits((all) => all.filter((e) => e.store !== top.store));
  }, [top]);

  const saveVersion = useCallback(async () => {
    if (!top) return;
    const { block } = top.open;
    const lib = library?.find((b) => b.name === block.name);
    if (!lib) return;
    // An edit is known by its store: patching it makes a new object.
    const patch = (p: Partial<BlockEdit>) => setEdits((all) => all.map((e) => (e.store === top.store ? { ...e, ...p } : e)));
    patch({ saving: true, problem: null });
    const definition: BlockSpec = specToBlock(withBlockDefaults(docToSpec(top.store.getState().committed)), block);
    try {
      const saved = await blocksApi.saveVersion(lib.id, definition);
      setEdits((all) => all.filter((e) => e.store !== top.store));
      setOffer({ library: lib, version: saved.number });
      refreshLibrary();
    } catch (e) {
      const err = e as ApiError;
      const fields = err.fields ? Object.entries(err.fields).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join("; ") : String(v)}`) : [];
      patch({ saving: false, problem: [err.message, ...fields].join(" · ") });
    }
  }, [library, refreshLibrary, top]);

  const bodyCheck = useMemo(() => {
    if (!top) return null;
    const { block, values } = top.open;
    return (spec: GraphSpec) => bindParams(spec, block, values);
  }, [top?.open]); // eslint-disable-line react-hooks/exhaustive-deps

  const offerStore = top?.store ?? graphStore;
  const acceptOffer = useCallback(async () => {
    if (!offer || !offerStore) return;
    try {
      const v = await blocksApi.version(offer.library.id, offer.version);
      offerStore.edit((d) => upgradeInstances(d, definitionOf(v, offer.library.name), v.dependencies ?? []));
      setOffer(null);
    } catch (e) {
      onError((e as Error).message);
    }
  }, [offerStore, offer, onError]);

  const blockMode: BlockMode | undefined =
    top && bodyCheck
      ? {
          title: `Block ${top.open.block.name} v${top.open.block.version} (opened from ${top.open.instance})`,
          checkSpec: bodyCheck,
          canSave: !!library?.some((b) => b.name === top.open.block.name),
          saving: top.saving,
          problem: top.problem,
          onSaveVersion: () => void saveVersion(),
          onClose: close,
        }
      : undefined;

  return { depth: edits.length, top, blockMode, open, offer, offerStore, acceptOffer, dismissOffer: () => setOffer(null) };
}
