// "Train" in the editor's toolbar (off, saying why, until the saved canvas checks clean) and the
// link to the graph's runs.
import { useState } from "react";
import { navigate } from "../../router";
import { type TrainReadiness, trainBlocker } from "./rules";
import { TrainDialog } from "./TrainDialog";

export interface TrainButtonProps extends TrainReadiness {
  graphId: number;
}

export function TrainButton(props: TrainButtonProps) {
  const [open, setOpen] = useState(false);
  const blocker = trainBlocker(props);
  return (
    <>
      <button
        type="button"
        data-testid="train"
        aria-label={blocker ? `Train (${blocker})` : "Train this revision"}
        title={blocker ?? `Train revision ${props.savedRevision}`}
        disabled={blocker !== null}
        onClick={() => setOpen(true)}
      >
        ▶ Train
      </button>
      <a
        className="toolbar-link"
        href={`${import.meta.env.BASE_URL}runs?graph=${props.graphId}`}
        data-testid="graph-runs"
        onClick={(e) => {
          e.preventDefault();
          navigate(`/runs?graph=${props.graphId}`);
        }}
      >
        Runs
      </a>
      {open && props.savedRevision !== null && <TrainDialog graphId={props.graphId} revision={props.savedRevision} onClose={() => setOpen(false)} />}
    </>
  );
}
