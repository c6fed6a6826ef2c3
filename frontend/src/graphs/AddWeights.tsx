// "Add weights…" on a saved revision: a .safetensors file (`python -m engine import ...
// --weights-out`) checked against the revision's model and kept as a run's checkpoint "imported";
// a refusal says which key or shape does not fit.
import { useId, useState } from "react";
import { navigate } from "../router";
import { type ImportedRun, importWeights, sendingLine, weightsProblem } from "./importSpec";

type Outcome = { kind: "sending"; text: string } | { kind: "refused"; text: string } | { kind: "done"; run: ImportedRun };

export function AddWeights({ graphId, revision }: { graphId: number; revision: number }) {
  const id = useId();
  const [outcome, setOutcome] = useState<Outcome | null>(null);

  async function send(file: File) {
    const problem = weightsProblem(file);
    if (problem) return setOutcome({ kind: "refused", text: problem });
    setOutcome({ kind: "sending", text: sendingLine(file.name, { loaded: 0, total: null }) });
    try {
      const run = await importWeights(graphId, revision, file, (p) => setOutcome({ kind: "sending", text: sendingLine(file.name, p) }));
      setOutcome({ kind: "done", run });
    } catch (e) {
      setOutcome({ kind: "refused", text: (e as Error).message });
    }
  }

  return (
    <div className="add-weights">
      <label className="button" htmlFor={`${id}-file`} title="Weights trained elsewhere (.safetensors), kept as a checkpoint of this revision to fine-tune from">
        Add weights…
      </label>
      <input
        id={`${id}-file`}
        type="file"
        accept=".safetensors"
        hidden
        data-testid={`add-weights-${revision}`}
        aria-label={`Add weights to revision ${revision}`}
        onChange={(e) => {
          const file = e.target.files?.[0];
          e.target.value = "";
          if (file) void send(file);
        }}
      />
      {outcome?.kind === "sending" && (
        <p className="muted small" role="status">
          {outcome.text}
        </p>
      )}
      {outcome?.kind === "refused" && (
        <p className="field-error" role="alert" data-testid={`add-weights-error-${revision}`}>
          {outcome.text}
        </p>
      )}
      {outcome?.kind === "done" && (
        <p className="small" role="status" data-testid={`add-weights-done-${revision}`}>
          Added: run{" "}
          <a
            href={`${import.meta.env.BASE_URL}runs/${outcome.run.id}`}
            onClick={(e) => {
              e.preventDefault();
              navigate(`/runs/${outcome.run.id}`);
            }}
          >
            {outcome.run.name}
          </a>{" "}
          holds them as checkpoint “imported”.
        </p>
      )}
    </div>
  );
}

/** The run of weights imported with the graph (`?weights_run=` of the editor's URL), or null. */
export function importedRunOf(search: string): number | null {
  const id = Number(new URLSearchParams(search).get("weights_run"));
  return Number.isInteger(id) && id > 0 ? id : null;
}

/** The editor's note after an import with weights: where they are, and how to start from them. */
export function ImportedWeightsBanner({ runId }: { runId: number }) {
  return (
    <div className="banner" role="status" data-testid="imported-weights">
      <span>
        Imported with its weights: run{" "}
        <a
          href={`${import.meta.env.BASE_URL}runs/${runId}`}
          data-testid="imported-run"
          onClick={(e) => {
            e.preventDefault();
            navigate(`/runs/${runId}`);
          }}
        >
          #{runId}
        </a>{" "}
        holds them as checkpoint “imported”; fine-tune from it there.
      </span>
    </div>
  );
}
