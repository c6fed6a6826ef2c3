// A version's formats for other runtimes on the model page: each built format with its size, its
// accuracy against fp32 on the test split and its CPU latency against fp32, a download link, the
// "Build .pt2 / int8" button with the job's progress, and the version's KServe manifest to copy.
import { useEffect, useState } from "react";
import { useSession } from "../auth/session";
import { JobProgress } from "../jobs/JobProgress";
import { fromJob, type JobView } from "../jobs/jobState";
import type { ModelVersion, RegisteredModelDetail } from "./api";
import {
  FORMAT_LABELS,
  buildFormats,
  downloadUrl,
  formatDelta,
  formatLatency,
  formatSize,
  formatsApi,
  orderedFormats,
} from "./formats";

export function FormatsTable({ modelId, version }: { modelId: number; version: ModelVersion }) {
  const built = orderedFormats(version.formats ?? {});
  if (built.length === 0)
    return (
      <p className="muted" data-testid="formats-none">
        No formats built yet for v{version.number}.
      </p>
    );
  return (
    <table className="table small" data-testid="formats-table">
      <thead>
        <tr>
          <th>Format</th>
          <th>Size</th>
          <th>On the test split</th>
          <th>CPU latency, 1 row</th>
          <th>CPU latency, 64 rows</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {built.map(([name, f]) => (
          <tr key={name} data-testid={`format-${name}`}>
            <td>{FORMAT_LABELS[name] ?? name}</td>
            {f.error ? (
              <td colSpan={5} className="error">
                Not built: {f.error}
              </td>
            ) : (
              <>
                <td>{formatSize(f.size)}</td>
                <td title={f.fp32_value !== undefined ? `fp32: ${f.metric} ${f.fp32_value}` : undefined}>
                  {formatDelta(f)}
                </td>
                <td>{formatLatency(f.latency_ms?.b1, f.fp32_latency_ms?.b1)}</td>
                <td>{formatLatency(f.latency_ms?.b64, f.fp32_latency_ms?.b64)}</td>
                <td>
                  <a href={downloadUrl(modelId, version.number, name)} download data-testid={`download-${name}`}>
                    Download {f.file}
                  </a>
                </td>
              </>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // The Clipboard API needs a secure context; fall back to a hidden textarea.
    const ta = document.createElement("textarea");
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    document.execCommand("copy");
    ta.remove();
  }
}

export default function VersionFormats({ model, onChanged }: { model: RegisteredModelDetail; onChanged: () => void }) {
  const { canEdit } = useSession();
  const [number, setNumber] = useState<number | null>(model.versions[0]?.number ?? null);
  const [job, setJob] = useState<JobView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [manifest, setManifest] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const version = model.versions.find((v) => v.number === number) ?? model.versions[0];

  useEffect(() => {
    if (!version) return;
    let live = true;
    setManifest(null);
    formatsApi.kserveYaml(model.id, version.number).then(
      (text) => live && setManifest(text),
      (e) => live && setError((e as Error).message),
    );
    return () => {
      live = false;
    };
  }, [model.id, version]);

  if (!version) return null;
  const busy = job !== null && (job.phase === "waiting" || job.phase === "working");

  async function build() {
    setError(null);
    try {
      await buildFormats(model.id, version.number, ["pt2", "int8"], (j) => setJob(fromJob(j)));
      onChanged();
    } catch (e) {
      setError((e as Error).message);
    }
  }

  return (
    <section className="panel" data-testid="version-formats" aria-label="Formats for other runtimes">
      <h2>
        Formats for other runtimes{" "}
        {model.versions.length > 1 && (
          <select
            aria-label="Version"
            data-testid="formats-version"
            value={version.number}
            onChange={(e) => {
              setNumber(Number(e.target.value));
              setJob(null);
            }}
          >
            {model.versions.map((v) => (
              <option key={v.number} value={v.number}>
                v{v.number}
              </option>
            ))}
          </select>
        )}
      </h2>
      <FormatsTable modelId={model.id} version={version} />
      {canEdit && (
        <p>
          <button type="button" data-testid="build-formats" disabled={busy} onClick={() => void build()}>
            Build .pt2 / int8
          </button>{" "}
          {job && <JobProgress view={job} what="Formats" testid="formats-job" barTestid="formats-bar" barLabel="Building formats" live />}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <h3>On a cluster: KServe</h3>
      <p className="muted small">
        An InferenceService serving v{version.number} from the media volume; <code>kubectl apply -f</code> it (see the deploy guide).
      </p>
      {manifest !== null && (
        <>
          <button
            type="button"
            data-testid="copy-kserve"
            onClick={() =>
              void copyText(manifest).then(() => {
                setCopied(true);
                window.setTimeout(() => setCopied(false), 1500);
              })
            }
          >
            {copied ? "Copied" : "Copy manifest"}
          </button>
          <pre className="code small" data-testid="kserve-manifest">
            {manifest}
          </pre>
        </>
      )}
    </section>
  );
}
