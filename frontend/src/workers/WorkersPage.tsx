// The workers and the queue (/app/workers): each worker's devices, what it trains now and when it
// was last heard from (GET /api/workers/), then the team's queued runs in the order they will
// start, each with why it waits and its priority, editable in place. Read again every few seconds.
import { useCallback, useEffect, useState } from "react";
import { apiRequest, resultsOf } from "../api/client";
import type { Page } from "../api/types";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { BASE, navigate } from "../router";
import { placementText } from "../runs/placement";
import { PriorityEditor } from "../runs/PriorityEditor";
import { runName } from "../runs/runsTable";
import type { Run } from "../runs/types";
import { type QueuedRun, type WorkerRow, devicesText, queueOrder, queuesText, workerDoing } from "./workers";

const POLL_MS = 5000;
/** Queued runs whose place is read one by one (the list does not say it). */
const PLACED = 20;

function RunLink({ id, text }: { id: number; text: string }) {
  return (
    <a
      href={`${BASE}/runs/${id}`}
      onClick={(e) => {
        e.preventDefault();
        navigate(`/runs/${id}`);
      }}
    >
      {text}
    </a>
  );
}

async function loadQueue(team: number): Promise<QueuedRun[]> {
  const listed = resultsOf(await apiRequest<Page<Run> | Run[]>("GET", `/api/runs/?team=${team}&status=queued&page_size=200`));
  const placed = await Promise.all(listed.slice(0, PLACED).map((r) => apiRequest<QueuedRun>("GET", `/api/runs/${r.id}/`).catch(() => r as QueuedRun)));
  return queueOrder([...placed, ...listed.slice(PLACED)]);
}

function WorkersTable({ workers }: { workers: WorkerRow[] }) {
  if (workers.length === 0) return <p className="muted" data-testid="no-workers">No worker has been heard from in the last day: start one (`make worker`) to train runs.</p>;
  return (
    <table className="table" data-testid="workers-table">
      <caption className="sr-only">Workers</caption>
      <thead>
        <tr>
          <th scope="col">Worker</th>
          <th scope="col">Devices</th>
          <th scope="col">Doing</th>
          <th scope="col">Queues</th>
          <th scope="col">Last seen</th>
        </tr>
      </thead>
      <tbody>
        {workers.map((w) => {
          const run = w.current_run as { id?: number } | null;
          return (
            <tr key={w.hostname} data-testid="worker-row" data-alive={w.alive} className={w.alive ? undefined : "muted"}>
              <td>{w.hostname}</td>
              <td className="small" data-testid="worker-devices">
                {devicesText(w)}
              </td>
              <td className="small" data-testid="worker-doing">
                {run?.id ? <RunLink id={run.id} text={workerDoing(w)} /> : workerDoing(w)}
              </td>
              <td className="small" title={w.queues.join(", ")}>
                {queuesText(w.queues)}
              </td>
              <td className="small nowrap">{new Date(w.last_seen).toLocaleTimeString()}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function QueueTable({ queue, canEdit, onSaved }: { queue: QueuedRun[]; canEdit: boolean; onSaved: (run: Run) => void }) {
  if (queue.length === 0) return <p className="muted" data-testid="queue-empty">No run of this team is waiting.</p>;
  return (
    <table className="table" data-testid="queue-table">
      <caption className="sr-only">Queued runs, in the order they start</caption>
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">Run</th>
          <th scope="col">Graph</th>
          <th scope="col">Waiting</th>
          <th scope="col">Priority</th>
        </tr>
      </thead>
      <tbody>
        {queue.map((r, i) => (
          <tr key={r.id} data-testid={`queue-row-${r.id}`}>
            <td>{r.queue?.position ?? i + 1}</td>
            <td>
              <RunLink id={r.id} text={runName(r)} />
            </td>
            <td className="small">
              {r.graph_name} <span className="muted">rev {r.revision}</span>
            </td>
            <td className="small">{placementText(r).replace(/^queued: #\d+, /, "") || "queued"}</td>
            <td>{canEdit ? <PriorityEditor run={r} onSaved={onSaved} /> : r.priority}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function WorkersPage() {
  const { team, canEdit } = useSession();
  const [workers, setWorkers] = useState<WorkerRow[] | null>(null);
  const [queue, setQueue] = useState<QueuedRun[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(async () => {
    try {
      const [w, q] = await Promise.all([apiRequest<WorkerRow[]>("GET", "/api/workers/"), team ? loadQueue(team.id) : Promise.resolve([])]);
      setWorkers(w);
      setQueue(q);
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [team]);
  useEffect(() => {
    void load();
    const timer = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(timer);
  }, [load]);

  return (
    <div className="page">
      <TopBar />
      <main className="wide-page" data-testid="workers-page">
        <h1>Workers</h1>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {workers === null ? <p className="muted">Loading…</p> : <WorkersTable workers={workers} />}
        <h2>Queue{team ? ` of ${team.name}` : ""}</h2>
        <p className="muted small">Runs start in this order: teams take turns, and within a team a higher priority goes first.</p>
        {queue === null ? <p className="muted">Loading…</p> : <QueueTable queue={queue} canEdit={canEdit} onSaved={() => void load()} />}
      </main>
    </div>
  );
}
