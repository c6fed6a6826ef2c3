// The run's place among the team's queued runs.
export function PriorityField({ id, value, errors, onChange }: { id: string; value: string; errors: string[] | undefined; onChange: (text: string) => void }) {
  return (
    <div className="config-grid">
      <div className="field">
        <label htmlFor={id}>Priority</label>
        <input
          id={id}
          data-testid="train-priority"
          type="text"
          inputMode="numeric"
          value={value}
          aria-invalid={!!errors?.length}
          className={errors?.length ? "invalid" : undefined}
          onChange={(e) => onChange(e.target.value)}
        />
        <p className="help">Order among your team's queued runs: -10..10, higher first.</p>
        {errors?.map((m) => (
          <p key={m} className="field-error" data-testid="error-priority" role="alert">
            {m}
          </p>
        ))}
      </div>
    </div>
  );
}
