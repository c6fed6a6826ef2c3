// Under the run's status: which worker and device train it, or (queued) its place in the fair
// order and why it waits, with the team's limits (read-only; site admins set them) and its priority
// (editable while it waits). A queued run's place is read again every few seconds.
import { useEffect, useState } from "react";
import { apiRequest } from "../api/client";
import { useSession } from "../auth/session";
import { PriorityEditor } from "./PriorityEditor";
import { limitsText, placementText, type QueueInfo, type TeamLimits } from "./placement";
import type { Run } from "./types";

type Placed = Run & { device?: string; queue?: QueueInfo | null };

const QUEUE_REFRESH_MS = 5000;

export function RunPlacement({ run }: { run: Run }) {
  const [fresh, setFresh] = useState<Placed | null>(null);
  const [team, setTeam] = useState<TeamLimits | null>(null);
  const queued = run.status === "queued";
  const { canEdit } = useSession();

  useEffect(() => {
    let stop = false;
    apiRequest<TeamLimits>("GET", `/api/teams/${run.team}/`)
      .then((t) => !stop && setTeam(t))
      .catch(() => undefined);
    return () => {
      stop = true;
    };
  }, [run.team]);

  useEffect(() => {
    setFresh(null);
    if (!queued) return;
    const timer = window.setInterval(() => {
      apiRequest<Placed>("GET", `/api/runs/${run.id}/`)
        .then(setFresh)
        .catch(() => undefined);
    }, QUEUE_REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [run.id, queued]);

  const shown: Placed = fresh && fresh.status === run.status ? { ...run, queue: fresh.queue, priority: fresh.priority } : (run as Placed);
  const where = placementText(shown);
  const limits = limitsText(team);
  if (!where && !limits && !queued) return null;
  return (
    <div className="run-placement">
      <p className="muted small" data-testid="run-placement" data-waiting-for={shown.queue?.waiting_for ?? ""}>
        {where}
        {where && limits ? " · " : ""}
        {limits && <span data-testid="team-limits">{limits}</span>}
      </p>
      {queued && canEdit && <PriorityEditor run={shown} onSaved={(r) => setFresh(r as Placed)} />}
    </div>
  );
}
