// A run's name, notes and tags at the top of its page: editors rename it inline, write notes (saved
// when the box loses focus) and add or remove tags; each is one PATCH /api/runs/<id>/ and a refusal
// is shown next to its field.
import { type ReactNode, useEffect, useState } from "react";
import { ApiError, apiRequest } from "../api/client";
import { BASE, navigate } from "../router";
import { cleanTag, runName, withTag } from "./runsTable";
import type { Run } from "./types";

type Field = "name" | "notes" | "tags";

/** The server's words for what was wrong with `field` (or the whole message). */
function fieldError(e: unknown, field: Field): string {
  if (e instanceof ApiError && e.fields) {
    const problem = e.fields[field];
    if (Array.isArray(problem)) return problem.map(String).join(" ");
    if (typeof problem === "string") return problem;
  }
  return (e as Error).message;
}

/** An in-app link (no page reload). */
function AppLink({ to, children }: { to: string; children: ReactNode }) {
  return (
    <a
      href={`${BASE}${to}`}
      onClick={(e) => {
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

/** Where the run comes from: a sweep's trial, a fine-tune or a resume of another run's checkpoint. */
function Lineage({ run }: { run: Run }) {
  const origin = run.origin as { sweep?: number | null; trial?: number | null };
  const init = run.init as { run?: number | null; checkpoint?: string | null; mode?: string | null };
  return (
    <>
      {origin.sweep ? (
        <span className="muted small" data-testid="run-sweep">
          trial {origin.trial} of <AppLink to={`/sweeps/${origin.sweep}`}>sweep {origin.sweep}</AppLink>
        </span>
      ) : null}
      {init.run ? (
        <span className="muted small" data-testid="run-init">
          {init.mode === "resume" ? "resumed from" : "fine-tuned from"} <AppLink to={`/runs/${init.run}`}>run {init.run}</AppLink> ({init.checkpoint})
        </span>
      ) : null}
    </>
  );
}

export function RunMeta({ run, canEdit, onRun }: { run: Run; canEdit: boolean; onRun: (run: Run) => void }) {
  const [editingName, setEditingName] = useState(false);
  const [name, setName] = useState(run.name);
  const [notes, setNotes] = useState(run.notes);
  const [tag, setTag] = useState("");
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [saving, setSaving] = useState<Field | null>(null);
  const tags = run.tags;

  // Another tab (or the stream) may change the run: show its values when not being edited.
  useEffect(() => {
    if (!editingName) setName(run.name);
  }, [run.name, editingName]);
  useEffect(() => setNotes(run.notes), [run.notes]);

  async function save(field: Field, value: string | string[]): Promise<boolean> {
    setSaving(field);
    try {
      onRun(await apiRequest<Run>("PATCH", `/api/runs/${run.id}/`, { [field]: value }));
      setErrors((e) => ({ ...e, [field]: undefined }));
      return true;
    } catch (e) {
      setErrors((errs) => ({ ...errs, [field]: fieldError(e, field) }));
      return false;
    } finally {
      setSaving(null);
    }
  }

  async function saveName() {
    const value = name.trim();
    if (value === (run.name)) {
      setEditingName(false);
      return;
    }
    if (await save("name", value)) setEditingName(false);
  }

  async function addTag() {
    const clean = cleanTag(tag);
    if (!clean) return;
    if (await save("tags", withTag(tags, clean))) setTag("");
  }

  return (
    <div className="run-meta" data-testid="run-meta">
      <div className="row">
        {editingName ? (
          <label className="run-name-edit">
            <span className="sr-only">Run name</span>
            <input
              type="text"
              autoFocus
              data-testid="run-name-input"
              value={name}
              placeholder={`run ${run.id}`}
              maxLength={200}
              aria-invalid={errors.name ? true : undefined}
              aria-describedby={errors.name ? "run-name-error" : undefined}
              onChange={(e) => setName(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter") void saveName();
                if (e.key === "Escape") {
                  setName(run.name);
                  setEditingName(false);
                  setErrors((errs) => ({ ...errs, name: undefined }));
                }
              }}
              onBlur={() => void saveName()}
              disabled={saving === "name"}
            />
          </label>
        ) : (
          <h1 className="run-title" data-testid="run-name">
            {runName(run)}
          </h1>
        )}
        {canEdit && !editingName && (
          <button type="button" className="link small" data-testid="run-rename" onClick={() => setEditingName(true)}>
            Rename
          </button>
        )}
        <Lineage run={run} />
        <ul className="chips" aria-label="Tags" data-testid="run-tags">
          {tags.map((t) => (
            <li key={t} className="chip">
              {t}
              {canEdit && (
                <button
                  type="button"
                  className="chip-remove"
                  aria-label={`Remove tag ${t}`}
                  data-testid={`run-tag-remove-${t}`}
                  disabled={saving === "tags"}
                  onClick={() => void save("tags", tags.filter((x) => x !== t))}
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
        {canEdit && (
          <form
            className="tag-add"
            onSubmit={(e) => {
              e.preventDefault();
              void addTag();
            }}
          >
            <label>
              <span className="sr-only">New tag</span>
              <input
                type="text"
                size={10}
                placeholder="add tag"
                data-testid="run-tag-input"
                value={tag}
                aria-invalid={errors.tags ? true : undefined}
                aria-describedby={errors.tags ? "run-tags-error" : undefined}
                onChange={(e) => {
                  setTag(e.target.value);
                  setErrors((errs) => ({ ...errs, tags: undefined }));
                }}
              />
            </label>
            <button type="submit" className="small" data-testid="run-tag-add" disabled={!cleanTag(tag) || saving === "tags"}>
              Add
            </button>
          </form>
        )}
      </div>
      {errors.name && (
        <p className="error small" id="run-name-error" data-testid="run-name-error">
          {errors.name}
        </p>
      )}
      {errors.tags && (
        <p className="error small" id="run-tags-error" data-testid="run-tags-error">
          {errors.tags}
        </p>
      )}
      {canEdit ? (
        <label className="run-notes">
          <span className="sr-only">Notes</span>
          <textarea
            data-testid="run-notes"
            rows={notes ? 3 : 1}
            placeholder="Notes: what this run tries, what you saw"
            value={notes}
            aria-invalid={errors.notes ? true : undefined}
            aria-describedby={errors.notes ? "run-notes-error" : undefined}
            onChange={(e) => setNotes(e.target.value)}
            onBlur={() => {
              if (notes !== (run.notes)) void save("notes", notes);
            }}
          />
        </label>
      ) : (
        run.notes && (
          <p className="run-notes-text" data-testid="run-notes">
            {run.notes}
          </p>
        )
      )}
      {saving === "notes" && <span className="muted small">saving…</span>}
      {errors.notes && (
        <p className="error small" id="run-notes-error" data-testid="run-notes-error">
          {errors.notes}
        </p>
      )}
    </div>
  );
}
