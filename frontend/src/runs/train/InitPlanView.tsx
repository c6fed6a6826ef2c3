// The plan of a start from a checkpoint: what loads, and node by node what does not.
import { type InitPlan, planView } from "../initPlan";

export function InitPlanView({ plan }: { plan: InitPlan }) {
  const view = planView(plan);
  return (
    <div className="init-plan" data-testid="init-plan">
      {view.problems.map((m) => (
        <p key={m} className="error" role="alert" data-testid="init-problem">
          {m}
        </p>
      ))}
      <p data-testid="init-loaded">
        {view.loaded} parameter{view.loaded === 1 ? "" : "s"} load from the checkpoint
        {view.exact ? "; every parameter of the graph matches." : "; these do not:"}
      </p>
      {!view.exact && (
        <table className="table small" data-testid="init-mismatches">
          <thead>
            <tr>
              <th scope="col">node</th>
              <th scope="col">parameter</th>
              <th scope="col">what happens</th>
            </tr>
          </thead>
          <tbody>
            {view.nodes.flatMap((n) =>
              n.rows.map((r, i) => (
                <tr key={`${n.node}.${r.parameter}.${r.kind}`} data-testid={`init-node-${n.node}`} data-kind={r.kind}>
                  {i === 0 && (
                    <th scope="row" rowSpan={n.rows.length}>
                      {n.node}
                    </th>
                  )}
                  <td>{r.parameter}</td>
                  <td className={r.kind === "mismatched" ? "warn" : undefined}>{r.text}</td>
                </tr>
              )),
            )}
          </tbody>
        </table>
      )}
    </div>
  );
}
