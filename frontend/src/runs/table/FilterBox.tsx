// The filter expression box: the runs query language (docs/subsystems/runs.md), applied on Enter
// or once typing pauses; field names complete from the loaded runs (a datalist of whole
// expressions, filterCompletion.ts); the server's error is shown under it with a caret at its column.
import { useId, useMemo } from "react";
import { completions } from "../filterCompletion";
import type { FilterError } from "./useRunPages";

export interface FilterBoxProps {
  text: string;
  /** The expression the server last read (the error's column is a place in it). */
  applied: string;
  fields: readonly string[];
  error: FilterError | null;
  onText: (text: string) => void;
  onApply: () => void;
}

export function FilterBox({ text, applied, fields, error, onText, onApply }: FilterBoxProps) {
  const listId = useId();
  const errorId = useId();
  const offered = useMemo(() => completions(text, fields), [text, fields]);
  return (
    <div className="filter-box">
      <label>
        <span>Filter</span>
        <input
          type="text"
          data-testid="runs-filter"
          className="mono"
          list={listId}
          spellCheck={false}
          autoComplete="off"
          placeholder='metrics.val/accuracy > 0.9 and config.optimizer.lr < 0.01 and tags = "baseline"'
          value={text}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? errorId : undefined}
          onChange={(e) => onText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") {
              e.preventDefault();
              onApply();
            }
          }}
        />
      </label>
      <datalist id={listId}>
        {offered.map((o) => (
          <option key={o} value={o} />
        ))}
      </datalist>
      {error && (
        <div className="filter-error" id={errorId} role="alert" data-testid="runs-filter-error">
          {error.column !== null && (
            <pre className="filter-caret" aria-hidden data-testid="runs-filter-caret">
              {applied}
              {"\n"}
              {" ".repeat(error.column - 1)}^
            </pre>
          )}
          <span className="error">{error.message}</span>
        </div>
      )}
    </div>
  );
}
