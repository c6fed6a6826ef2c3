// One registered model (/app/models/<id>): its versions with their figures and source run, the
// aliases, "Promote to production" with the figures against the version it replaces (moved at
// once, or filed for a second admin's approval when the team asks for it), the requests waiting
// for approval, the history of every alias move, a try-it form on raw input with snippets to
// copy, and live charts of the served model's traffic.
import { useCallback, useEffect, useState } from "react";
import { TopBar } from "../auth/TopBar";
import { useSession } from "../auth/session";
import { navigate } from "../router";
import { formatMetric } from "../runs/format";
import { ApprovalsPanel } from "./ApprovalsPanel";
import { PromoteDialog } from "./PromoteDialog";
import { ServingCharts } from "./ServingCharts";
import { TryIt } from "./TryIt";
import { type AliasApproval, type AliasMove, type ModelVersion, type RegisteredModelDetail, isApproval, modelsApi, versionFigures } from "./api";
import { modelEndpoint } from "./serving";
import VersionFormats from "./VersionFormats";

/** One line of the history: who moved which alias from where to where (and who approved it). */
export function historyLine(h: AliasMove): string {
  const what =
    h.to_version === null
      ? `dropped ${h.alias} (was v${h.from_version})`
      : `moved ${h.alias} ${h.from_version ? `v${h.from_version} → ` : "to "}v${h.to_version}`;
  return `${h.actor ?? "someone"} ${what}${h.approved_by ? `, approved by ${h.approved_by}` : ""}${h.note ? `: ${h.note}` : ""}`;
}

/** Why the promote button is off for this person (null: it is on). */
export function promoteBlocked(role: string | null | undefined, needsApproval: boolean): string | null {
  if (role === "admin") return null;
  if (needsApproval && role === "editor") return null;
  return needsApproval ? "Only an editor or admin asks to move production" : "Only a team admin moves production";
}

export default function ModelPage({ modelId }: { modelId: number }) {
  const { team, canEdit, user } = useSession();
  const [model, setModel] = useState<RegisteredModelDetail | null>(null);
  const [approvals, setApprovals] = useState<AliasApproval[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [promoting, setPromoting] = useState<ModelVersion | null>(null);

  const load = useCallback(async () => {
    try {
      const [detail, pending] = await Promise.all([modelsApi.get(modelId), modelsApi.approvals(modelId)]);
      setModel(detail);
      setApprovals(pending);
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [modelId]);
  useEffect(() => void load(), [load]);

  const move = async (alias: string, version: number) => {
    try {
      const answer = await modelsApi.setAlias(modelId, alias, version);
      if (!isApproval(answer)) setModel(answer);
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const decide = async (approval: AliasApproval, verdict: "approve" | "reject") => {
    try {
      await modelsApi.decide(modelId, approval.id, verdict);
      setNotice(verdict === "approve" ? `Approved: ${approval.alias} now names v${approval.version}.` : "Request rejected.");
      await load();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const setRule = async (on: boolean) => {
    if (!model) return;
    setModel({ ...model, production_needs_approval: on }); // the box follows the click at once
    try {
      await modelsApi.setApprovalRule(model.team, on);
      await load();
    } catch (e) {
      setModel({ ...model, production_needs_approval: !on });
      setError((e as Error).message);
    }
  };

  const isAdmin = team?.role === "admin";
  const needsApproval = model?.production_needs_approval ?? false;
  const blocked = promoteBlocked(team?.role, needsApproval);
  const production = model?.versions.find((v) => v.number === model.aliases.production) ?? null;
  const endpoint = modelEndpoint(model);
  const served = (model?.versions ?? []).flatMap((v) => v.aliases.map((a): [number, string] => [v.number, a]));
  return (
    <div className="page">
      <TopBar />
      <main className="wide-page model-page" data-testid="model-page">
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {notice && (
          <p className="notice" role="status" data-testid="model-notice">
            {notice}
          </p>
        )}
        {model && (
          <>
            <h1>
              {model.name}{" "}
              <span className="muted small">
                {Object.entries(model.aliases)
                  .map(([alias, v]) => `${alias} → v${v}`)
                  .join(", ")}
              </span>
            </h1>
            {model.versions.length === 0 && (
              <p className="muted" data-testid="no-versions">
                No versions yet: open a finished run and press "Register as a model version".
              </p>
            )}
            <table className="table" data-testid="version-list">
              <thead>
                <tr>
                  <th>Version</th>
                  <th>From</th>
                  <th>Figures</th>
                  <th>Aliases</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {model.versions.map((v) => (
                  <tr key={v.number} data-testid={`version-${v.number}`}>
                    <td>v{v.number}</td>
                    <td className="small">
                      {v.source.run ? (
                        <a
                          href={`${import.meta.env.BASE_URL}runs/${String(v.source.run)}`}
                          onClick={(e) => {
                            e.preventDefault();
                            navigate(`/runs/${String(v.source.run)}`);
                          }}
                        >
                          run {String(v.source.run)}
                        </a>
                      ) : (
                        "a deleted run"
                      )}
                      {v.source.checkpoint ? `, checkpoint ${String(v.source.checkpoint)}` : ", final weights"}
                      {" · "}
                      <a
                        href={`${import.meta.env.BASE_URL}models/${model.id}/versions/${v.number}/lineage`}
                        data-testid={`version-lineage-${v.number}`}
                        onClick={(e) => {
                          e.preventDefault();
                          navigate(`/models/${model.id}/versions/${v.number}/lineage`);
                        }}
                      >
                        lineage
                      </a>
                    </td>
                    <td className="small">
                      {versionFigures(v.metrics)
                        .map(([k, value]) => `${k} ${formatMetric(value)}`)
                        .join(" · ")}
                    </td>
                    <td className="small">{v.aliases.join(", ")}</td>
                    <td>
                      {canEdit && !v.aliases.includes("staging") && (
                        <button type="button" onClick={() => void move("staging", v.number)}>
                          Make staging
                        </button>
                      )}{" "}
                      {!v.aliases.includes("production") && (
                        <button
                          type="button"
                          data-testid={`promote-${v.number}`}
                          disabled={blocked !== null}
                          title={blocked ?? undefined}
                          onClick={() => {
                            setNotice(null);
                            setPromoting(v);
                          }}
                        >
                          Promote to production
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {promoting && (
              <PromoteDialog
                key={promoting.number}
                version={promoting}
                production={production}
                needsApproval={needsApproval}
                promote={(n, note) => modelsApi.setAlias(modelId, "production", n, note)}
                onCancel={() => setPromoting(null)}
                onDone={(answer) => {
                  setPromoting(null);
                  if (isApproval(answer)) {
                    setNotice(`Asked for approval: production moves to v${answer.approval.version} when another admin approves.`);
                    void load();
                  } else {
                    setModel(answer);
                    setNotice(`Production now names v${promoting.number}.`);
                  }
                }}
              />
            )}
            <ApprovalsPanel approvals={approvals} me={user?.username ?? null} isAdmin={isAdmin} onDecide={(a, v) => void decide(a, v)} />
            {isAdmin && (
              <label className="inline-check small" data-testid="approval-rule">
                <input type="checkbox" checked={needsApproval} onChange={(e) => void setRule(e.target.checked)} /> Moving
                production needs a second admin's approval (a setting of team {team?.name}, for all its models)
              </label>
            )}
            {model.versions.length > 0 && <VersionFormats model={model} onChanged={() => void load()} />}
            <h2>History</h2>
            {model.history.length === 0 ? (
              <p className="muted">No alias has been set yet.</p>
            ) : (
              <ul className="history" data-testid="alias-history">
                {model.history.map((h, i) => (
                  <li key={i}>
                    <span className="muted small">{new Date(h.at).toLocaleString()}</span> {historyLine(h)}
                  </li>
                ))}
              </ul>
            )}
            <TryIt endpoint={endpoint} served={served} classes={classesOf(production ?? model.versions[0] ?? null)} />
            <ServingCharts endpoint={endpoint} />
          </>
        )}
      </main>
    </div>
  );
}

/** The class names a version recorded (source.classes), for the probabilities' rows. */
function classesOf(version: ModelVersion | null): string[] {
  const classes = (version?.source as { classes?: unknown } | undefined)?.classes;
  return Array.isArray(classes) ? classes.map(String) : [];
}
