// The team's saved views of the runs list (/api/run-views/): pick one to apply its filter, ordering
// and columns; editors save the current view under a name and delete one.
import { useCallback, useEffect, useState } from "react";
import { apiRequest, resultsOf } from "../../api/client";
import type { Page, Schema } from "../../api/types";

export type RunView = Schema<"RunView">;

/** What a saved view holds besides its name. */
export interface ViewState {
  filter: string;
  ordering: string;
  columns: string[];
}

export interface SavedViewsProps {
  team: number;
  canEdit: boolean;
  current: () => ViewState;
  onApply: (view: ViewState) => void;
}

export function SavedViews({ team, canEdit, current, onApply }: SavedViewsProps) {
  const [views, setViews] = useState<RunView[]>([]);
  const [chosen, setChosen] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      setViews(resultsOf(await apiRequest<Page<RunView> | RunView[]>("GET", `/api/run-views/?team=${team}&page_size=500`)));
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team]);

  useEffect(() => {
    void load();
  }, [load]);

  function pick(id: number | null) {
    setChosen(id);
    const view = views.find((v) => v.id === id);
    if (view) onApply({ filter: view.filter, ordering: view.ordering, columns: view.columns });
  }

  async function save() {
    const name = window.prompt("Name of this view (its filter, order and columns)")?.trim();
    if (!name) return;
    try {
      const view = await apiRequest<RunView>("POST", "/api/run-views/", { team, name, ...current() });
      setError(null);
      await load();
      setChosen(view.id);
    } catch (e) {
      setError((e as Error).message);
    }
  }

  async function remove() {
    const view = views.find((v) => v.id === picked);
    if (!view || !window.confirm(`Delete the view "${view.name}" for the whole team?`)) return;
    try {
      await apiRequest<void>("DELETE", `/api/run-views/${view.id}/`);
      setError(null);
      setChosen(null);
      await load();
    } catch (e) {
      setError((e as Error).message);
    }
  }

  // A view stays picked while the page shows its filter and order; a change of either unpicks it.
  const now = current();
  const picked = views.find((v) => v.id === chosen && v.filter === now.filter && v.ordering === now.ordering)?.id ?? null;

  return (
    <div className="saved-views row">
      <label>
        <span>View</span>
        <select data-testid="runs-view" value={picked ?? ""} onChange={(e) => pick(e.target.value ? Number(e.target.value) : null)}>
          <option value="">{views.length ? "Pick a saved view" : "No saved views"}</option>
          {views.map((v) => (
            <option key={v.id} value={v.id}>
              {v.name}
            </option>
          ))}
        </select>
      </label>
      {canEdit && (
        <>
          <button type="button" data-testid="runs-view-save" onClick={() => void save()}>
            Save view
          </button>
          <button type="button" data-testid="runs-view-delete" disabled={picked === null} onClick={() => void remove()}>
            Delete view
          </button>
        </>
      )}
      {error && (
        <span className="error" role="alert" data-testid="runs-view-error">
          {error}
        </span>
      )}
    </div>
  );
}
