// What every node and edge component reads: the op catalog, the latest check, and whether editing is allowed.
import { createContext, useContext } from "react";
import type { OpSchema, ValidationError, ValidationReport } from "../api/types";

export interface CheckState {
  report: ValidationReport | null;
  errorsByNode: Map<string, ValidationError[]>;
  /** True while a check for the current content is in flight. */
  pending: boolean;
  /** The check could not be run (network, server): not the same as "invalid". */
  failure: string | null;
}

export const EMPTY_CHECK: CheckState = { report: null, errorsByNode: new Map(), pending: false, failure: null };

export const OpsContext = createContext<Map<string, OpSchema>>(new Map());
export const CheckContext = createContext<CheckState>(EMPTY_CHECK);
export const ReadOnlyContext = createContext<boolean>(false);

export const useOps = () => useContext(OpsContext);
export const useCheck = () => useContext(CheckContext);
export const useReadOnly = () => useContext(ReadOnlyContext);
