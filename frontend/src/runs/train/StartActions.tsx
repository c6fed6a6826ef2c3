// The foot of the train dialog: why the graph or the request was refused, Close, and Start.
import type { MappedErrors } from "../configForm";

export interface StartActionsProps {
  errors: MappedErrors;
  busy: boolean;
  disabled: boolean;
  /** The chosen checkpoint's plan is not ready, or has problems. */
  planBlocks: boolean;
  onClose: () => void;
}

export function StartActions({ errors, busy, disabled, planBlocks, onClose }: StartActionsProps) {
  return (
    <>
      {errors.graph.length > 0 && (
        <div className="error" role="alert" data-testid="train-graph-errors">
          <p>The graph does not fit this dataset:</p>
          <ul>
            {errors.graph.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        </div>
      )}
      {errors.general.map((m) => (
        <p key={m} className="error" role="alert" data-testid="train-error">
          {m}
        </p>
      ))}
      <div className="row dialog-actions">
        <span className="spacer" />
        <button type="button" onClick={onClose} data-testid="train-close">
          Close
        </button>
        <button
          type="submit"
          className="primary"
          data-testid="train-start"
          disabled={disabled}
          title={planBlocks ? "The checkpoint's plan must be ready and without problems" : undefined}
        >
          {busy ? "Starting…" : "Start training"}
        </button>
      </div>
    </>
  );
}
