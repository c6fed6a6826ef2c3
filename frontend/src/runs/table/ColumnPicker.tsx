// The column picker: which metrics (final and best), config paths and graph parameters the table
// shows, from the names the team's runs have (GET /api/runs/columns/), narrowed by typing. The
// choice is the page's until a view is saved with it; "Automatic" goes back to the columns that
// differ among the loaded runs.
import { useId, useState } from "react";
import { type PickerGroup, narrowGroups, toggleKey } from "../runColumns";

export interface ColumnPickerProps {
  groups: readonly PickerGroup[];
  /** The keys shown now. */
  shown: readonly string[];
  /** True while no choice was made (the automatic columns are shown). */
  automatic: boolean;
  onChange: (keys: string[]) => void;
  onAutomatic: () => void;
  /** Open from the start (tests). */
  open?: boolean;
}

export function ColumnPicker({ groups, shown, automatic, onChange, onAutomatic, open }: ColumnPickerProps) {
  const [text, setText] = useState("");
  const searchId = useId();
  const visible = narrowGroups(groups, text);
  const on = new Set(shown);
  return (
    <details className="column-picker" data-testid="column-picker" open={open}>
      <summary data-testid="column-picker-toggle">Columns ({shown.length})</summary>
      <div className="column-picker-body">
        <div className="row">
          <label htmlFor={searchId} className="sr-only">
            Find a column
          </label>
          <input
            id={searchId}
            type="search"
            data-testid="column-search"
            placeholder="Find a metric, config path or parameter"
            value={text}
            onChange={(e) => setText(e.target.value)}
          />
          <button type="button" data-testid="columns-automatic" disabled={automatic} onClick={onAutomatic} title="The columns that differ among the loaded runs">
            Automatic
          </button>
        </div>
        {visible.length === 0 && <p className="muted small">{groups.some((g) => g.keys.length) ? "No column holds that." : "The runs have no metrics or config yet."}</p>}
        {visible.map((g) => (
          <fieldset key={g.id} className="column-group" data-testid={`column-group-${g.id}`}>
            <legend>{g.title}</legend>
            {g.keys.map((key) => (
              <label key={key} className="column-choice">
                <input type="checkbox" data-testid={`column-${key}`} checked={on.has(key)} onChange={(e) => onChange(toggleKey(shown, key, e.target.checked))} />
                <span className="mono">{key}</span>
              </label>
            ))}
          </fieldset>
        ))}
      </div>
    </details>
  );
}
