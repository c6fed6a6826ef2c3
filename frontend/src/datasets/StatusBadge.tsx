// A coloured status word (dataset: processing/ready/failed; run: queued/running/succeeded/...).
export function StatusBadge({ status, testid }: { status: string; testid?: string }) {
  return (
    <span className={`badge badge-${status}`} data-testid={testid}>
      {status}
    </span>
  );
}
