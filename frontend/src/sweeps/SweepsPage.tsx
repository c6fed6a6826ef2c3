// Placeholder until the sweeps list lands (issue 10).
export default function SweepsPage() {
  return <main className="page">Sweeps</main>;
}
