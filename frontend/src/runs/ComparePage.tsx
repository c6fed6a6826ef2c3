// Placeholder until the comparison page lands (issue 10).
export default function ComparePage({ runIds }: { runIds: number[] }) {
  return <main className="page">Comparing runs {runIds.join(", ")}</main>;
}
