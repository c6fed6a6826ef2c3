// The team's block library (webapp/blocks): its blocks and their versions, and which newer version
// an instance could move to.
import { apiRequest } from "../api/client";
import type { Page } from "../api/types";
import { type BlockSpec, parseBlockRef } from "./blocks";

/** One block of the team library (GET /api/blocks/). */
export interface LibraryBlock {
  id: number;
  team: number;
  name: string;
  description: string;
  latest_version: number;
  versions: number[];
}

/** One version (GET /api/blocks/<id>/versions/<n>/): the definition and the definitions it uses. */
export interface LibraryBlockVersion {
  number: number;
  definition: BlockSpec;
  dependencies: BlockSpec[];
  note?: string;
}

export const blocksApi = {
  list: async (team: number): Promise<LibraryBlock[]> => {
    const page = await apiRequest<Page<LibraryBlock> | LibraryBlock[]>("GET", `/api/blocks/?team=${team}`);
    return Array.isArray(page) ? page : page.results;
  },
  create: (team: number, name: string, description: string, definition: BlockSpec) =>
    apiRequest<LibraryBlock>("POST", "/api/blocks/", { team, name, description, definition }),
  version: (id: number, n: number) => apiRequest<LibraryBlockVersion>("GET", `/api/blocks/${id}/versions/${n}/`),
  saveVersion: (id: number, definition: BlockSpec, note = "") =>
    apiRequest<LibraryBlockVersion>("POST", `/api/blocks/${id}/versions/`, note ? { definition, note } : { definition }),
};

/** The definition of a version as the server answers it, with the name and number it gave. */
export function definitionOf(v: LibraryBlockVersion, name: string): BlockSpec {
  return { ...v.definition, name: v.definition.name ?? name, version: v.definition.version ?? v.number };
}

/** The newest library version above the one an instance pins, or null. */
export function newerVersion(library: LibraryBlock[], op: string): { block: LibraryBlock; version: number } | null {
  const ref = parseBlockRef(op);
  if (!ref) return null;
  const block = library.find((b) => b.name === ref.name);
  return block && block.latest_version > ref.version ? { block, version: block.latest_version } : null;
}
