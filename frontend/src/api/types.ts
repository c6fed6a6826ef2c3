// Readable names for the REST API's wire types. Every one is generated (never written here by hand):
// api.gen.ts from the OpenAPI schema (`manage.py spectacular`), spec.gen.ts from the engine's JSON
// Schema of the graph spec; `make gen-types` regenerates both. Runs, datasets and the stream: runs/types.ts.
import type { components } from "./api.gen";
import type { GraphSpec } from "./spec.gen";

export type { GraphSpec, InputSpec, NodeSpec } from "./spec.gen";

/** One component of the OpenAPI schema, by name. */
export type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];

/** A canvas position as the spec's `layout` stores it (the engine ignores `layout`: no schema). */
export interface Position {
  x: number;
  y: number;
}

export type Role = Schema<"RoleEnum">;
export type Team = Schema<"UserTeam">;
/** Who is signed in (GET /api/auth/me/). */
export type User = Schema<"Me">;
/** How one signs in here: the password form, single sign-on (GET /api/auth/config/). */
export type AuthConfig = Schema<"AuthConfig">;

/** The engine's parameter kinds (engine.ops.registry.ParamType). */
export type ParamType = Schema<"ParamKindEnum">;
/**
 * One parameter of an op, as the engine's catalog describes it (engine.ops.registry.Param). The
 * catalog is read at run time, so a newer server may send a kind this build does not know yet:
 * the form falls back to a text box for it (paramForm.ts).
 */
export type ParamSchema = Omit<Schema<"Param">, "type"> & { type: ParamType | (string & {}) };
export type OpSchema = Schema<"OpSchema">;
/** GET /api/ops/. */
export type OpCatalog = Schema<"OpCatalog">;

export type ValidationError = Schema<"ValidationProblem">;
/**
 * The engine sends `params: null` for a node whose shape could not be inferred; the canvas shows no
 * count then (`null > 0` is false). TODO(editor): read `info.params ?? 0` in nodes.tsx and
 * Inspector.tsx, then use Schema<"NodeReport"> as it is.
 */
export type NodeReport = Omit<Schema<"NodeReport">, "params"> & { params: number };
/** POST /api/graphs/validate/. */
export type ValidationReport = Omit<Schema<"ValidationReport">, "nodes"> & { nodes: Record<string, NodeReport> };

export type GraphSummary = Schema<"Graph">;

/** A page of a list endpoint ({count, next, previous, results}; webapp/api/pagination.py). */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export type RevisionSummary = Schema<"RevisionSummary">;
/** The stored spec is a graph spec (a JSON column in the OpenAPI schema; its type is spec.gen.ts). */
export type Revision = Omit<Schema<"Revision">, "spec"> & { spec: GraphSpec };
