// Wire types of the REST API that are not the graph spec (that one is generated: spec.gen.ts).
export type { GraphSpec, InputSpec, NodeSpec } from "./spec.gen";

/** A canvas position as the spec's `layout` stores it. */
export interface Position {
  x: number;
  y: number;
}

export type Role = "viewer" | "editor" | "admin";

export interface Team {
  id: number;
  name: string;
  role: Role;
}

export interface User {
  id: number;
  username: string;
  teams: Team[];
}

export type ParamType = "int" | "float" | "bool" | "choice" | "int_list" | "str" | "float_list";

/** One parameter of an op, as the engine's catalog describes it. */
export interface ParamSchema {
  name: string;
  type: ParamType | string;
  default?: unknown;
  min?: number | null;
  max?: number | null;
  choices?: unknown[] | null;
  required?: boolean;
  help?: string;
  /** Length bounds of an int_list, when the catalog gives them. */
  min_items?: number | null;
  max_items?: number | null;
  nullable?: boolean;
}

export interface OpSchema {
  name: string;
  category: string;
  help?: string;
  arity: { min: number; max: number | null };
  params: ParamSchema[];
}

export interface OpCatalog {
  version: number;
  /** Category order for the palette, when the catalog gives one. */
  categories?: string[];
  ops: OpSchema[];
}

export interface ValidationError {
  node: string | null;
  code: string;
  field: string | null;
  message: string;
}

export interface NodeReport {
  op: string;
  shape: number[] | null;
  params: number;
}

export interface ValidationReport {
  valid: boolean;
  errors: ValidationError[];
  nodes: Record<string, NodeReport>;
  outputs: Record<string, number[] | null>;
  total_params: number;
  activation_bytes: number;
}

export interface GraphSummary {
  id: number;
  team: number;
  name: string;
  latest_revision: number | null;
  updated_at: string;
}

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface RevisionSummary {
  number: number;
  created_at: string;
  created_by: string | number | { id: number; username: string } | null;
  spec_hash: string;
}

export interface Revision extends RevisionSummary {
  spec: import("./spec.gen").GraphSpec;
}
