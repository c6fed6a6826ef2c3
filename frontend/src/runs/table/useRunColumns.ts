// GET /api/runs/columns/ for the team, the graph (on a graph's runs page) and the applied filter: the names the column picker offers
// and the filter completes. A refused filter keeps the last answer (the list reports the error).
import { useEffect, useState } from "react";
import { apiRequest } from "../../api/client";
import { NO_COLUMNS, type RunColumnsAnswer } from "../runColumns";

export function useRunColumns(team: number | null, filter: string, graph: number | null = null): RunColumnsAnswer {
  const [answer, setAnswer] = useState<RunColumnsAnswer>(NO_COLUMNS);
  useEffect(() => {
    if (team === null) return;
    let live = true;
    const query = new URLSearchParams({ team: String(team) });
    if (graph !== null) query.set("graph", String(graph));
    if (filter.trim()) query.set("filter", filter.trim());
    apiRequest<RunColumnsAnswer>("GET", `/api/runs/columns/?${query}`).then(
      (a) => live && setAnswer(a),
      () => {},
    );
    return () => {
      live = false;
    };
  }, [team, filter, graph]);
  return answer;
}
