// References to node outputs as the spec writes them ("split1:1") and as the canvas draws them
// (a wire from the handle "out1"): the one vocabulary the spec conversion and the blocks share.

/**
 * A node with several outputs (Split, Chunk) is read port by port: the spec says "split1:1", the
 * canvas draws a wire from split1's handle "out1". A plain reference is the node's one handle "out".
 * (Ids cannot contain ':', so the split is unambiguous; the engine's engine.spec.split_ref agrees.)
 */
export function splitRef(ref: string): { node: string; port: number | null } {
  const match = /^(.+):(0|[1-9]\d*)$/.exec(ref);
  return match ? { node: match[1], port: Number(match[2]) } : { node: ref, port: null };
}

/** The source handle of a wire that reads `ref`. */
export function sourceHandleOf(ref: string): string {
  const { port } = splitRef(ref);
  return port === null ? "out" : `out${port}`;
}

/** The spec reference a wire from `source`'s handle `handle` reads. */
export function refOf(source: string, handle: string | null | undefined): string {
  const match = /^out(\d+)$/.exec(handle ?? "");
  return match ? `${source}:${Number(match[1])}` : source;
}
