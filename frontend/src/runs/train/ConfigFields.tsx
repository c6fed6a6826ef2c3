// The training-config fields: the train dialog's and the new-sweep form's base config (one form).
import type { ConfigField, ConfigForm, FormValues } from "../configForm";

function FieldInput({ field, value, onChange, id }: { field: ConfigField; value: string | boolean; onChange: (v: string | boolean) => void; id: string }) {
  const common = { id, "data-testid": `config-${field.path}` };
  if (field.kind === "bool") return <input type="checkbox" {...common} checked={value === true} onChange={(e) => onChange(e.target.checked)} />;
  if (field.kind === "choice")
    return (
      <select {...common} value={String(value)} onChange={(e) => onChange(e.target.value)}>
        {field.choices!.map((c) => (
          <option key={c} value={c}>
            {field.choiceLabels?.[c] ?? c}
          </option>
        ))}
      </select>
    );
  return (
    <input
      {...common}
      type="text"
      inputMode={field.kind === "int" ? "numeric" : field.kind === "float" ? "decimal" : undefined}
      value={String(value)}
      onChange={(e) => onChange(e.target.value)}
    />
  );
}

/** The fields shown for `values`; `errors` are keyed by field path; `prefix` makes the element ids unique on the page. */
export function ConfigFields({
  form,
  values,
  errors,
  prefix,
  onChange,
}: {
  form: ConfigForm;
  values: FormValues;
  errors: Record<string, string[]>;
  prefix: string;
  onChange: (path: string, value: string | boolean) => void;
}) {
  const shown = form.fields.filter((f) => !f.when || f.when(values));
  return (
    <div className="config-grid">
      {shown.map((f) => {
        const id = `${prefix}-${f.path}`;
        const problems = errors[f.path];
        return (
          <div key={f.path} className={`field${f.kind === "bool" ? " field-check" : ""}`}>
            <label htmlFor={id}>{f.label}</label>
            <FieldInput field={f} id={id} value={values[f.path] ?? ""} onChange={(v) => onChange(f.path, v)} />
            {f.help && <p className="help">{f.help}</p>}
            {problems?.map((m) => (
              <p key={m} className="field-error" data-testid={`error-${f.path}`} role="alert">
                {m}
              </p>
            ))}
          </div>
        );
      })}
    </div>
  );
}
