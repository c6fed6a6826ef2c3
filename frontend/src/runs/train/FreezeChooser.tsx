// The nodes whose parameters stay unchanged during training (`config.freeze`), picked from the graph.
export function FreezeChooser({ nodes, chosen, onChange, errors }: { nodes: string[]; chosen: string[]; onChange: (ids: string[]) => void; errors?: string[] }) {
  if (nodes.length === 0) return null;
  return (
    <fieldset className="freeze-chooser" data-testid="train-freeze">
      <legend>Freeze (these nodes' weights do not train)</legend>
      {nodes.map((id) => (
        <label key={id} className="row">
          <input
            type="checkbox"
            data-testid={`freeze-${id}`}
            checked={chosen.includes(id)}
            onChange={(e) => onChange(e.target.checked ? [...chosen, id] : chosen.filter((c) => c !== id))}
          />
          {id}
        </label>
      ))}
      {errors?.map((m) => (
        <p key={m} className="field-error" data-testid="error-freeze" role="alert">
          {m}
        </p>
      ))}
    </fieldset>
  );
}
