// Any background work, drawn one way: an optional status word (the domain's own: "processing",
// "ready"), the label (Waiting… / Working… 42% / Done / Failed:), a progress bar while it waits or
// works (with the percentage when the work reports one, indeterminate otherwise) and the error.
import { percent, type JobView } from "./jobState";

export interface JobProgressProps {
  view: JobView;
  /** What the work is, before the label ("ONNX" -> "ONNX: Working…"). */
  what?: string;
  /** More words after the label while working ("1.2 MB of 3 MB"). */
  detail?: string;
  /** The domain's status word, drawn as a badge (class badge-<word>) ahead of the label; the badge
   * then says done and failed, and the label shows only while the work waits or works. */
  badge?: string;
  badgeTestid?: string;
  /** Hide the label once done (the badge or the result itself says so). */
  quietWhenDone?: boolean;
  testid?: string;
  barTestid?: string;
  errorTestid?: string;
  /** The bar's accessible name. */
  barLabel?: string;
  /** Announce changes (aria-live="polite") where nothing around does. */
  live?: boolean;
}

export function JobProgress({
  view,
  what,
  detail,
  badge,
  badgeTestid,
  quietWhenDone = false,
  testid,
  barTestid,
  errorTestid,
  barLabel = "Progress",
  live = false,
}: JobProgressProps) {
  const { phase, fraction, error } = view;
  const busy = phase === "waiting" || phase === "working";
  const showLabel = busy || (badge === undefined && !(quietWhenDone && phase === "done"));
  const prefix = what ? `${what}: ` : "";
  const pct = fraction === null ? null : percent(fraction);
  return (
    <span
      className={`job-progress job-${phase}`}
      data-phase={phase}
      data-testid={testid}
      aria-live={live ? "polite" : undefined}
      aria-busy={busy || undefined}
    >
      {badge !== undefined && (
        <span className={`badge badge-${badge}`} data-testid={badgeTestid}>
          {badge}
        </span>
      )}
      {showLabel && (
        <span className="job-label">
          {prefix}
          {phase === "failed" ? "Failed:" : view.label}
          {busy && detail ? <span className="muted"> ({detail})</span> : null}
        </span>
      )}
      {busy &&
        (pct === null ? (
          <progress className="job-bar" data-testid={barTestid} aria-label={barLabel} />
        ) : (
          <progress
            className="job-bar"
            data-testid={barTestid}
            aria-label={barLabel}
            max={100}
            value={pct}
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={pct}
            aria-valuetext={`${pct}%`}
          />
        ))}
      {phase === "failed" && (
        <span className="job-error error" data-testid={errorTestid}>
          {error}
        </span>
      )}
    </span>
  );
}
