// Always visible: valid or how many errors, total parameters, estimated memory, saved or not.
import { memo } from "react";
import { formatBytes, formatCount } from "../format";
import { useCheck } from "./context";

export const StatusBar = memo(function StatusBar({ saveState, readOnly }: { saveState: string; readOnly: boolean }) {
  const { report, pending, failure } = useCheck();
  const errors = report?.errors ?? [];
  const graphErrors = errors.filter((e) => !e.node);
  let validity: string;
  let tone: string;
  if (failure) {
    validity = `Check failed: ${failure}`;
    tone = "warn";
  } else if (!report) {
    validity = "Checking…";
    tone = "muted";
  } else if (report.valid) {
    validity = pending ? "Valid (checking…)" : "Valid";
    tone = "ok";
  } else {
    validity = `${errors.length} error${errors.length === 1 ? "" : "s"}${pending ? " (checking…)" : ""}`;
    tone = "bad";
  }
  const weights = (report?.total_params ?? 0) * 4;
  // Nothing counts until a node is wired to an Output: say that, not "0 params".
  const noOutput = report !== null && report !== undefined && Object.keys(report.outputs ?? {}).length === 0;
  return (
    <footer className="status-bar" data-testid="status-bar" role="status" aria-live="polite">
      <span className={`status-validity ${tone}`} data-testid="status-validity">
        {validity}
      </span>
      {graphErrors.length > 0 && (
        <span className="status-graph-errors bad" data-testid="status-graph-errors">
          {graphErrors.map((e) => e.message).join("; ")}
        </span>
      )}
      <span data-testid="status-params" title={noOutput ? "Parameters are counted once a node is wired to an Output" : "trainable parameters"}>
        {noOutput ? "params: no output yet" : report ? `${formatCount(report.total_params)} params` : "– params"}
      </span>
      <span data-testid="status-memory" title="float32 weights plus activations of one sample">
        {noOutput ? "" : report ? `≈ ${formatBytes(weights + report.activation_bytes)} (weights ${formatBytes(weights)}, activations ${formatBytes(report.activation_bytes)}/sample)` : "–"}
      </span>
      <span className="spacer" />
      <span data-testid="status-saved" className={saveState.startsWith("Unsaved") ? "warn" : "muted"}>
        {readOnly ? `Read only · ${saveState}` : saveState}
      </span>
    </footer>
  );
});
