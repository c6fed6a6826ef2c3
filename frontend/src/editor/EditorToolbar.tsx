// The canvas's toolbar: history, layout and fit, make block, templates, the side panel's tabs, and
// save and train (or, in a block's body, back to the graph and save the block version).
import { TrainButton } from "../runs/train/TrainButton";
import type { RunAction } from "./actions";
import { redo, undo } from "./actions/history";
import { autoLayout } from "./actions/layout";
import { openMakeBlock } from "./actions/makeBlock";
import { loadTemplate } from "./actions/template";
import { fitView } from "./actions/view";
import type { BlockMode, SidePanel } from "./editorTypes";
import { TEMPLATES } from "./templates";

export interface EditorToolbarProps {
  run: RunAction;
  readOnly: boolean;
  canUndo: boolean;
  canRedo: boolean;
  selectedOps: number;
  panel: SidePanel;
  onPanel: (panel: SidePanel) => void;
  blockMode: BlockMode | undefined;
  graphId: number;
  dirty: boolean;
  savedRevision: number | null;
  onSave: () => void;
  /** The live check's verdict on the canvas (null while it is not known yet). */
  valid: boolean | null;
}

export function EditorToolbar(p: EditorToolbarProps) {
  const { run, readOnly, blockMode, panel } = p;
  const tabs: SidePanel[] = blockMode ? ["inspector", "code"] : ["inspector", "revisions", "code"];
  return (
    <div className="toolbar" role="toolbar" aria-label="Canvas actions">
      <button type="button" data-testid="undo" aria-label="Undo (Ctrl-Z)" title="Undo (Ctrl-Z)" disabled={!p.canUndo} onClick={() => run(undo, undefined)}>
        ↶ Undo
      </button>
      <button type="button" data-testid="redo" aria-label="Redo (Ctrl-Shift-Z)" title="Redo (Ctrl-Shift-Z)" disabled={!p.canRedo} onClick={() => run(redo, undefined)}>
        ↷ Redo
      </button>
      <button type="button" data-testid="auto-layout" aria-label="Auto-layout (L)" title="Auto-layout (L)" disabled={readOnly} onClick={() => run(autoLayout, undefined)}>
        Layout
      </button>
      <button type="button" data-testid="fit-view" aria-label="Zoom to fit (F)" title="Zoom to fit (F)" onClick={() => run(fitView, undefined)}>
        Fit
      </button>
      {!readOnly && (
        <button
          type="button"
          data-testid="make-block"
          title="Make a block of the selected nodes (it goes to the team's library)"
          disabled={p.selectedOps === 0}
          onClick={() => run(openMakeBlock, undefined)}
        >
          Make block…
        </button>
      )}
      {!readOnly && !blockMode && TEMPLATES.length > 0 && (
        <select aria-label="Load a template" data-testid="template-select" value="" onChange={(e) => run(loadTemplate, e.target.value)}>
          <option value="">Template…</option>
          {TEMPLATES.map((t) => (
            <option key={t.key} value={t.key}>
              {t.label}
            </option>
          ))}
        </select>
      )}
      <span className="spacer" />
      <div className="tabs" role="tablist" aria-label="Side panel">
        {tabs.map((t) => (
          <button key={t} type="button" role="tab" aria-selected={panel === t} data-testid={`tab-${t}`} className={panel === t ? "active" : undefined} onClick={() => p.onPanel(t)}>
            {t === "inspector" ? "Parameters" : t === "revisions" ? "Revisions" : "Code"}
          </button>
        ))}
      </div>
      {blockMode && (
        <>
          <span className="block-mode-title" data-testid="block-mode-title">
            {blockMode.title}
          </span>
          <button type="button" data-testid="block-close" onClick={blockMode.onClose}>
            Back to the graph
          </button>
          {!readOnly && (
            <button type="button" className="primary" data-testid="block-save-version" disabled={!blockMode.canSave || blockMode.saving} onClick={blockMode.onSaveVersion}>
              {blockMode.saving ? "Saving…" : "Save block version"}
            </button>
          )}
        </>
      )}
      {!readOnly && !blockMode && (
        <button type="button" className="primary" data-testid="save" aria-label="Save a revision (Ctrl-S)" title="Save a revision (Ctrl-S)" disabled={!p.dirty} onClick={p.onSave}>
          Save
        </button>
      )}
      {!readOnly && !blockMode && <TrainButton graphId={p.graphId} savedRevision={p.savedRevision} dirty={p.dirty} valid={p.valid} />}
    </div>
  );
}
