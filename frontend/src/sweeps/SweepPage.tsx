// Placeholder until the sweep page lands (issue 10).
export default function SweepPage({ sweepId }: { sweepId: number }) {
  return <main className="page">Sweep {sweepId}</main>;
}
