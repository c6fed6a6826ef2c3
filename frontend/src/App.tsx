import { lazy, Suspense, useEffect } from "react";
import { LoginPage } from "./auth/LoginPage";
import { SessionProvider, useSession } from "./auth/session";
import { DatasetsPage } from "./datasets/DatasetsPage";
import { GraphList } from "./graphs/GraphList";
import { RunsPage } from "./runs/RunsPage";
import { navigate, useRoute } from "./router";
import { WorkersPage } from "./workers/WorkersPage";

// The canvas (React Flow, dagre) loads only when a graph is opened.
const EditorPage = lazy(() => import("./editor/EditorPage"));
// The run page (uPlot charts) loads only when a run is opened.
const RunPage = lazy(() => import("./runs/RunPage"));
// The comparison and the sweep pages draw charts too (uPlot): loaded when opened.
const ComparePage = lazy(() => import("./runs/ComparePage"));
const SweepsPage = lazy(() => import("./sweeps/SweepsPage"));
const SweepPage = lazy(() => import("./sweeps/SweepPage"));
// The lineage canvas (React Flow, dagre): loaded when opened.
const LineagePage = lazy(() => import("./runs/lineage/LineagePage"));
const ModelsPage = lazy(() => import("./models/ModelsPage"));
const ModelPage = lazy(() => import("./models/ModelPage"));
const TeamSettingsPage = lazy(() => import("./teams/TeamSettingsPage"));
const AcceptPage = lazy(() => import("./teams/AcceptPage"));
const ProfilePage = lazy(() => import("./teams/ProfilePage"));
const AuditPage = lazy(() => import("./audit/AuditPage"));

function Pages() {
  const route = useRoute();
  const { user, loading } = useSession();

  useEffect(() => {
    if (loading) return;
    // An invitation's page is open to everyone: it may make the account.
    if (!user && route.page !== "login" && route.page !== "invitation") navigate("/login", true);
    if (user && route.page === "login") navigate("/", true);
  }, [user, loading, route.page]);

  if (loading) return <p className="muted center">Loading…</p>;
  if (route.page === "invitation")
    return (
      <Suspense fallback={<p className="muted center">Loading the invitation…</p>}>
        <AcceptPage key={route.token} token={route.token} />
      </Suspense>
    );
  if (!user) return <LoginPage />;
  switch (route.page) {
    case "editor":
      return (
        <Suspense fallback={<p className="muted center">Loading the canvas…</p>}>
          <EditorPage key={route.graphId} graphId={route.graphId} />
        </Suspense>
      );
    case "datasets":
      return <DatasetsPage />;
    case "runs":
      return <RunsPage graphId={route.graphId} />;
    case "run":
      return (
        <Suspense fallback={<p className="muted center">Loading the run…</p>}>
          <RunPage key={route.runId} runId={route.runId} />
        </Suspense>
      );
    case "lineage":
      return (
        <Suspense fallback={<p className="muted center">Loading the lineage…</p>}>
          <LineagePage key={route.runId} runId={route.runId} />
        </Suspense>
      );
    case "versionLineage":
      return (
        <Suspense fallback={<p className="muted center">Loading the lineage…</p>}>
          <LineagePage key={`${route.modelId}/${route.version}`} modelId={route.modelId} version={route.version} />
        </Suspense>
      );
    case "datasetLineage":
      return (
        <Suspense fallback={<p className="muted center">Loading the lineage…</p>}>
          <LineagePage key={`d${route.datasetId}/${route.version}`} datasetId={route.datasetId} version={route.version} />
        </Suspense>
      );
    case "compare":
      return (
        <Suspense fallback={<p className="muted center">Loading the comparison…</p>}>
          <ComparePage key={route.runIds.join(",")} runIds={route.runIds} />
        </Suspense>
      );
    case "sweeps":
      return (
        <Suspense fallback={<p className="muted center">Loading sweeps…</p>}>
          <SweepsPage />
        </Suspense>
      );
    case "sweep":
      return (
        <Suspense fallback={<p className="muted center">Loading the sweep…</p>}>
          <SweepPage key={route.sweepId} sweepId={route.sweepId} />
        </Suspense>
      );
    case "models":
      return (
        <Suspense fallback={<p className="muted center">Loading models…</p>}>
          <ModelsPage />
        </Suspense>
      );
    case "model":
      return (
        <Suspense fallback={<p className="muted center">Loading the model…</p>}>
          <ModelPage key={route.modelId} modelId={route.modelId} />
        </Suspense>
      );
    case "workers":
      return <WorkersPage />;
    case "team":
      return (
        <Suspense fallback={<p className="muted center">Loading the team…</p>}>
          <TeamSettingsPage key={route.teamId} teamId={route.teamId} />
        </Suspense>
      );
    case "profile":
      return (
        <Suspense fallback={<p className="muted center">Loading…</p>}>
          <ProfilePage />
        </Suspense>
      );
    case "audit":
      return (
        <Suspense fallback={<p className="muted center">Loading the audit log…</p>}>
          <AuditPage />
        </Suspense>
      );
    case "graphs":
    case "login":
      return <GraphList />;
    default:
      return (
        <main className="center">
          <p>Nothing here.</p>
          <button type="button" onClick={() => navigate("/")}>
            Back to graphs
          </button>
        </main>
      );
  }
}

export function App() {
  return (
    <SessionProvider>
      <Pages />
    </SessionProvider>
  );
}
