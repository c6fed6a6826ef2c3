// The team's audit log (/app/audit, team admins): who changed what and when, newest first, with
// before -> after in one line; filters by actor, action, object and date range; every matching
// entry as JSON lines (GET /api/teams/<id>/audit/export/).
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { ApiError, apiRequest } from "../api/client";
import type { Page } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { ACTION_CHOICES, type AuditEntry, type AuditFilters, NO_FILTERS, auditQuery, changeText, objectText } from "./audit";

const PAGE_SIZE = 50;

function FiltersForm({ initial, onApply }: { initial: AuditFilters; onApply: (filters: AuditFilters) => void }) {
  const [draft, setDraft] = useState(initial);
  const set = (name: keyof AuditFilters) => (e: { target: { value: string } }) => setDraft({ ...draft, [name]: e.target.value });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(draft);
  };
  return (
    <form className="audit-filters" onSubmit={submit} data-testid="audit-filters">
      <label>
        Actor <input value={draft.actor} onChange={set("actor")} placeholder="username" data-testid="audit-actor" />
      </label>
      <label>
        Action{" "}
        <select value={draft.action} onChange={set("action")} data-testid="audit-action">
          {ACTION_CHOICES.map((c) => (
            <option key={c.value} value={c.value}>
              {c.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Object <input value={draft.object} onChange={set("object")} placeholder="run:42" size={10} data-testid="audit-object" />
      </label>
      <label>
        From <input type="date" value={draft.from} onChange={set("from")} data-testid="audit-from" />
      </label>
      <label>
        To <input type="date" value={draft.to} onChange={set("to")} data-testid="audit-to" />
      </label>
      <button type="submit" data-testid="audit-apply">
        Apply
      </button>
      <button
        type="button"
        onClick={() => {
          setDraft(NO_FILTERS);
          onApply(NO_FILTERS);
        }}
      >
        Clear
      </button>
    </form>
  );
}

function AuditTable({ entries }: { entries: AuditEntry[] }) {
  if (entries.length === 0) return <p className="muted" data-testid="audit-empty">No entry matches.</p>;
  return (
    <table className="table small" data-testid="audit-table">
      <caption className="sr-only">Audit log, newest first</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Who</th>
          <th scope="col">Action</th>
          <th scope="col">Object</th>
          <th scope="col">Change</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr key={e.id} data-testid="audit-row" data-action={e.action}>
            <td className="nowrap" title={e.at}>
              {new Date(e.at).toLocaleString()}
            </td>
            <td>{e.actor_name}</td>
            <td>
              <code>{e.action}</code>
            </td>
            <td>{objectText(e)}</td>
            <td className="audit-change">{changeText(e.before, e.after)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export default function AuditPage() {
  const { team } = useSession();
  const [filters, setFilters] = useState<AuditFilters>(NO_FILTERS);
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  const [count, setCount] = useState(0);
  const [next, setNext] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const isAdmin = team?.role === "admin";

  const load = useCallback(
    async (page: number) => {
      if (!team || !isAdmin) return;
      try {
        const answer = await apiRequest<Page<AuditEntry>>(
          "GET",
          `/api/teams/${team.id}/audit/?${auditQuery(filters, { page: String(page), page_size: String(PAGE_SIZE) })}`,
        );
        setEntries((old) => (page === 1 || old === null ? answer.results : [...old, ...answer.results]));
        setCount(answer.count);
        setNext(answer.next ? page + 1 : null);
        setError(null);
      } catch (e) {
        setError(e instanceof ApiError ? e.message : (e as Error).message);
      }
    },
    [team, isAdmin, filters],
  );
  useEffect(() => {
    setEntries(null);
    void load(1);
  }, [load]);

  const exportQuery = auditQuery(filters);
  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="audit-page">
        <h1>Audit log{team ? ` of ${team.name}` : ""}</h1>
        {!isAdmin ? (
          <p className="muted" data-testid="audit-not-admin">
            Only the team's admins read its audit log.
          </p>
        ) : (
          <>
            <p className="muted small">Every change to the team's members, graphs, datasets, runs and models: who, when, and from what to what. Entries cannot be edited or deleted.</p>
            <FiltersForm initial={filters} onApply={setFilters} />
            <p className="small">
              {entries === null ? "" : `${count} ${count === 1 ? "entry" : "entries"}`}{" "}
              <a
                href={`/api/teams/${team.id}/audit/export/${exportQuery ? `?${exportQuery}` : ""}`}
                download={`audit-team${team.id}.jsonl`}
                data-testid="audit-download"
              >
                Download JSON lines
              </a>
            </p>
            {error && (
              <p className="error" role="alert">
                {error}
              </p>
            )}
            {entries === null ? <p className="muted">Loading…</p> : <AuditTable entries={entries} />}
            {next !== null && (
              <button type="button" onClick={() => void load(next)} data-testid="audit-more">
                Older entries
              </button>
            )}
          </>
        )}
      </main>
    </div>
  );
}
