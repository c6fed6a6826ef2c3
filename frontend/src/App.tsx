import { lazy, Suspense, useEffect } from "react";
import { LoginPage } from "./auth/LoginPage";
import { SessionProvider, useSession } from "./auth/session";
import { GraphList } from "./graphs/GraphList";
import { navigate, useRoute } from "./router";

// The canvas (React Flow, dagre) loads only when a graph is opened.
const EditorPage = lazy(() => import("./editor/EditorPage"));

function Pages() {
  const route = useRoute();
  const { user, loading } = useSession();

  useEffect(() => {
    if (loading) return;
    if (!user && route.page !== "login") navigate("/login", true);
    if (user && route.page === "login") navigate("/", true);
  }, [user, loading, route.page]);

  if (loading) return <p className="muted center">Loading…</p>;
  if (!user) return <LoginPage />;
  switch (route.page) {
    case "editor":
      return (
        <Suspense fallback={<p className="muted center">Loading the canvas…</p>}>
          <EditorPage key={route.graphId} graphId={route.graphId} />
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
