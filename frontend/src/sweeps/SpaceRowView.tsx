// One row of a sweep's search space (a config field or node parameter, its kind and range or
// choices), with the server's messages at the part they name.
import type { KeyOption, RowErrors, SpaceRow } from "./space";

/** A field's messages from the server's 400. */
export function FieldErrors({ messages, testid }: { messages?: string[]; testid: string }) {
  return (
    <>
      {messages?.map((m) => (
        <p key={m} className="field-error" role="alert" data-testid={testid}>
          {m}
        </p>
      ))}
    </>
  );
}

export function SpaceRowView({
  index,
  row,
  errors,
  listId,
  options,
  onChange,
  onRemove,
}: {
  index: number;
  row: SpaceRow;
  errors: RowErrors | undefined;
  listId: string;
  options: Map<string, KeyOption>;
  onChange: (row: SpaceRow) => void;
  onRemove: () => void;
}) {
  const set = (patch: Partial<SpaceRow>) => onChange({ ...row, ...patch });
  const numeric = row.type !== "categorical";
  return (
    <li className="space-row" data-testid={`space-row-${index}`}>
      <div className="field space-key">
        <label htmlFor={`${listId}-key-${index}`}>Key</label>
        <input
          id={`${listId}-key-${index}`}
          list={listId}
          type="text"
          placeholder="optimizer.lr or nodes.fc1.out_features"
          data-testid={`space-key-${index}`}
          value={row.key}
          // Picking a known key starts its row with the type and range that key usually has.
          onChange={(e) => {
            const known = options.get(e.target.value.trim());
            onChange(known ? { ...known.row } : { ...row, key: e.target.value });
          }}
        />
        <FieldErrors messages={errors?.key} testid={`error-space-${index}`} />
      </div>
      <div className="field">
        <label htmlFor={`${listId}-type-${index}`}>Type</label>
        <select id={`${listId}-type-${index}`} data-testid={`space-type-${index}`} value={row.type} onChange={(e) => set({ type: e.target.value as SpaceRow["type"] })}>
          <option value="float">float</option>
          <option value="int">int</option>
          <option value="categorical">categorical</option>
        </select>
        <FieldErrors messages={errors?.type} testid={`error-space-${index}-type`} />
      </div>
      {numeric ? (
        <>
          <div className="field">
            <label htmlFor={`${listId}-low-${index}`}>Low</label>
            <input id={`${listId}-low-${index}`} type="text" inputMode="decimal" data-testid={`space-low-${index}`} value={row.low} onChange={(e) => set({ low: e.target.value })} />
            <FieldErrors messages={errors?.low} testid={`error-space-${index}-low`} />
          </div>
          <div className="field">
            <label htmlFor={`${listId}-high-${index}`}>High</label>
            <input id={`${listId}-high-${index}`} type="text" inputMode="decimal" data-testid={`space-high-${index}`} value={row.high} onChange={(e) => set({ high: e.target.value })} />
            <FieldErrors messages={errors?.high} testid={`error-space-${index}-high`} />
          </div>
          {row.type === "int" && (
            <div className="field">
              <label htmlFor={`${listId}-step-${index}`}>Step</label>
              <input id={`${listId}-step-${index}`} type="text" inputMode="numeric" data-testid={`space-step-${index}`} value={row.step} onChange={(e) => set({ step: e.target.value })} />
              <FieldErrors messages={errors?.step} testid={`error-space-${index}-step`} />
            </div>
          )}
          <label className="row space-log">
            <input type="checkbox" data-testid={`space-log-${index}`} checked={row.log} onChange={(e) => set({ log: e.target.checked })} />
            log scale
          </label>
          <FieldErrors messages={errors?.log} testid={`error-space-${index}-log`} />
        </>
      ) : (
        <div className="field space-choices">
          <label htmlFor={`${listId}-choices-${index}`}>Choices (comma separated)</label>
          <input id={`${listId}-choices-${index}`} type="text" data-testid={`space-choices-${index}`} value={row.choices} onChange={(e) => set({ choices: e.target.value })} />
          <FieldErrors messages={errors?.choices} testid={`error-space-${index}-choices`} />
        </div>
      )}
      <button type="button" className="link" data-testid={`space-remove-${index}`} aria-label={`Remove ${row.key || "this dimension"}`} onClick={onRemove}>
        remove
      </button>
    </li>
  );
}
