// Upload a CSV (pick the target after seeing its columns), an image zip or a tensor file, with progress:
// as a new dataset (the datasets page) or as the next version of one (its versions panel, `of`).
import { useId, useRef, useState } from "react";
import { ApiError, type UploadProgress, uploadForm } from "../api/client";
import { formatBytes } from "../format";
import { JobProgress } from "../jobs/JobProgress";
import { jobView } from "../jobs/jobState";
import type { DataErrorJson, Dataset } from "../runs/types";
import { type CsvPeek, decodeCsvHead, describeDataError, kindForFile, peekCsv } from "./csvPreview";
import { type UploadMessage, uploadMessage } from "./uploadMessage";
import { type DatasetVersion, versionsApi } from "./versions";

const PEEK_BYTES = 64 * 1024;

type Kind = "csv" | "images" | "tensors";

const ACCEPT: Record<Kind, string> = { csv: ".csv,.tsv,.txt", images: ".zip", tensors: ".safetensors,.npz" };

/**
 * The options a new version is sent with: none (the server keeps the previous version's) when the
 * form chose what the dataset has already, else the dataset's options with the form's choices over them.
 */
export function versionOptions(current: Record<string, unknown>, chosen: Record<string, unknown>): Record<string, unknown> | undefined {
  const same = Object.entries(chosen).every(([k, v]) => JSON.stringify(current[k]) === JSON.stringify(v));
  return same ? undefined : { ...current, ...chosen };
}

type Props =
  | { team: number; datasets: Dataset[] | null; onDone: () => void; of?: undefined }
  | { of: Dataset; onDone: () => void; team?: undefined; datasets?: undefined };

/** A new dataset of `team`, or (with `of`) the next version of that dataset: one form for both. */
export function UploadForm({ team, datasets, onDone, of }: Props) {
  const ids = useId();
  const current = (of?.options ?? {}) as Record<string, unknown>;
  const fixedKind = of && of.kind !== "builtin" ? (of.kind as Kind) : null;
  const fileInput = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [kind, setKind] = useState<Kind | null>(null);
  const [name, setName] = useState("");
  const [peek, setPeek] = useState<CsvPeek | null>(null);
  const [target, setTarget] = useState("");
  const [task, setTask] = useState("auto");
  const [encoding, setEncoding] = useState("auto");
  const [detected, setDetected] = useState<string | null>(null);
  const [size, setSize] = useState(Array.isArray(current.size) ? String(current.size[0]) : "32");
  const [channels, setChannels] = useState(typeof current.channels === "number" ? String(current.channels) : "3");
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [message, setMessage] = useState<UploadMessage | null>(null);
  const shown = uploadMessage(message, datasets ?? null);
  const abort = useRef<AbortController | null>(null);

  async function pick(f: File | null) {
    setFile(f);
    setMessage(null);
    setPeek(null);
    setTarget("");
    const found = f ? kindForFile(f.name) : null;
    const k = fixedKind && found !== fixedKind ? null : found;
    setKind(k);
    if (f && !k)
      setMessage({
        tone: "error",
        text: fixedKind
          ? `${f.name}: a new version of ${of?.name} is a ${ACCEPT[fixedKind].split(",").join(" or ")} file, as its first was.`
          : `${f.name}: choose a .csv, a .zip of images (one folder per class), or a .safetensors/.npz file.`,
      });
    if (f && k === "csv") {
      const head = decodeCsvHead(new Uint8Array(await f.slice(0, PEEK_BYTES).arrayBuffer()));
      setDetected(head.encoding);
      setEncoding(typeof current.encoding === "string" ? current.encoding : "auto");
      const p = peekCsv(head.text);
      setPeek(p);
      const kept = typeof current.target === "string" && p.columns.includes(current.target) ? current.target : null;
      setTarget(kept ?? p.columns[p.columns.length - 1] ?? "");
      if (typeof current.task === "string") setTask(current.task);
    }
  }

  function options(): Record<string, unknown> {
    if (kind === "csv")
      return {
        ...(target ? { target } : {}),
        ...(task !== "auto" ? { task } : {}),
        ...(peek && peek.delimiter !== "," ? { delimiter: peek.delimiter } : {}),
        ...(encoding !== "auto" ? { encoding } : {}),
      };
    if (kind === "images") return { size: [Number(size), Number(size)], channels: Number(channels) };
    if (kind === "tensors") return task !== "auto" ? { task } : {};
    return {};
  }

  async function upload() {
    if (!file || !kind) return;
    if (of) {
      const dataset = of;
      return send(file, async (signal) => {
        const { status, data } = await versionsApi.upload(dataset.id, file, setProgress, versionOptions(current, options()), signal);
        return { tone: "ok", text: versionUploaded(status, data) };
      });
    }
    const form = new FormData();
    form.append("team", String(team));
    form.append("kind", kind);
    if (name.trim()) form.append("name", name.trim());
    form.append("options", JSON.stringify(options()));
    form.append("file", file);
    return send(file, async (signal) => {
      const { status, data } = await uploadForm<Dataset>("/api/datasets/upload/", form, setProgress, signal);
      return {
        tone: "ok",
        text: status === 202 ? `${data.name} is uploaded and being checked.` : `${data.name} is ready.`,
        datasetId: data.id,
      };
    });
  }

  /** One upload with its progress bar and cancel: `transfer` sends the file and says how it went. */
  async function send(chosenFile: File, transfer: (signal: AbortSignal) => Promise<UploadMessage>) {
    abort.current = new AbortController();
    setMessage(null);
    setProgress({ loaded: 0, total: chosenFile.size });
    try {
      setMessage(await transfer(abort.current.signal));
      clear();
    } catch (e) {
      refused(e);
    } finally {
      setProgress(null);
      abort.current = null;
      onDone();
    }
  }

  function clear() {
    setFile(null);
    setKind(null);
    setPeek(null);
    setName("");
    if (fileInput.current) fileInput.current.value = "";
  }

  function refused(e: unknown) {
    if (e instanceof ApiError) {
      const detail = e.body.detail as DataErrorJson | undefined;
      const text = e.status === 413 ? `The file is too large: ${e.message}` : detail && typeof detail === "object" ? describeDataError(detail) : e.message;
      setMessage({ tone: "error", text });
    } else if ((e as Error).name !== "AbortError") setMessage({ tone: "error", text: (e as Error).message });
    else setMessage({ tone: "error", text: "Upload cancelled." });
  }



  const uploading = progress !== null;
  const fraction = progress && progress.total ? progress.loaded / progress.total : null;

  return (
    <form
      className="dataset-form"
      aria-label={of ? `Upload a new version of ${of.name}` : "Upload a dataset"}
      data-testid={of ? "version-upload-form" : undefined}
      onSubmit={(e) => {
        e.preventDefault();
        void upload();
      }}
    >
      {of ? <h3>Upload a new version</h3> : <h2>Upload</h2>}
      {of && (
        <p className="help">
          It becomes version n+1 with the same options as the newest version unless you change them below; runs keep the version they
          pinned.
        </p>
      )}
      <div className="row">
        <input
          ref={fileInput}
          type="file"
          aria-label={of ? "New version file" : "Dataset file"}
          data-testid="upload-file"
          accept={fixedKind ? ACCEPT[fixedKind] : ".csv,.tsv,.txt,.zip,.safetensors,.npz"}
          disabled={uploading}
          onChange={(e) => void pick(e.target.files?.[0] ?? null)}
        />
        {!of && (
          <input aria-label="Dataset name" placeholder="Name (optional)" data-testid="upload-name" value={name} onChange={(e) => setName(e.target.value)} />
        )}
      </div>
      {file && kind && (
        <p className="help">
          {file.name} · {formatBytes(file.size)} · {kind === "csv" ? "CSV table" : kind === "images" ? "image archive" : "tensors"}
        </p>
      )}
      {kind === "csv" && peek && (
        <>
          <div className="csv-peek" data-testid="upload-columns">
            <table className="table small">
              <thead>
                <tr>
                  {peek.columns.map((c, i) => (
                    <th key={i} className={c === target ? "target-col" : undefined}>
                      {c}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {peek.rows.map((r, i) => (
                  <tr key={i}>
                    {r.map((cell, j) => (
                      <td key={j}>{cell}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="row">
            <label htmlFor={`${ids}-target`}>Target column</label>
            <select id={`${ids}-target`} data-testid="upload-target" value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">None yet (check the file only)</option>
              {peek.columns.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
            <label htmlFor={`${ids}-task`}>Task</label>
            <select id={`${ids}-task`} data-testid="upload-task" value={task} onChange={(e) => setTask(e.target.value)}>
              <option value="auto">Guess from the target</option>
              <option value="classification">Classification</option>
              <option value="regression">Regression</option>
            </select>
            <label htmlFor={`${ids}-encoding`}>Encoding</label>
            <select id={`${ids}-encoding`} data-testid="upload-encoding" value={encoding} onChange={(e) => setEncoding(e.target.value)}>
              <option value="auto">Detect{detected ? ` (${detected.toUpperCase()})` : ""}</option>
              <option value="utf-8">UTF-8</option>
              <option value="utf-16">UTF-16</option>
              <option value="latin-1">Latin-1</option>
            </select>
          </div>
          <p className="help">
            Every other column is a feature (leave some out in the preview once it is ready); text columns are one-hot encoded;
            empty cells are filled (median for numbers, a "(missing)" category for text) unless you choose otherwise.
          </p>
        </>
      )}
      {kind === "images" && (
        <div className="row">
          <label htmlFor={`${ids}-size`}>Resize to</label>
          <input id={`${ids}-size`} type="number" min={1} max={1024} value={size} onChange={(e) => setSize(e.target.value)} style={{ width: 80 }} />
          <span className="muted">px square</span>
          <label htmlFor={`${ids}-channels`}>Channels</label>
          <select id={`${ids}-channels`} value={channels} onChange={(e) => setChannels(e.target.value)}>
            <option value="3">3 (colour)</option>
            <option value="1">1 (grey)</option>
          </select>
        </div>
      )}
      {kind === "tensors" && (
        <div className="row">
          <label htmlFor={`${ids}-ttask`}>Task</label>
          <select id={`${ids}-ttask`} value={task} onChange={(e) => setTask(e.target.value)}>
            <option value="auto">Guess from y</option>
            <option value="classification">Classification</option>
            <option value="regression">Regression</option>
          </select>
        </div>
      )}
      <div className="row">
        <button type="submit" className="primary" data-testid="upload-submit" disabled={!file || !kind || uploading}>
          {of ? "Upload version" : "Upload"}
        </button>
        {uploading && (
          <>
            <JobProgress
              view={jobView("working", fraction)}
              what="Upload"
              detail={progress && progress.total ? `${formatBytes(progress.loaded)} of ${formatBytes(progress.total)}` : undefined}
              barTestid="upload-progress"
              barLabel="Upload progress"
            />
            <button type="button" onClick={() => abort.current?.abort()}>
              Cancel upload
            </button>
          </>
        )}
      </div>
      {shown && (
        <p className={shown.tone === "ok" ? "ok" : "error"} role={shown.tone === "error" ? "alert" : "status"} data-testid="upload-message">
          {shown.text}
        </p>
      )}
    </form>
  );
}

/** What a version upload says: "Version 2 is ready." or "... is uploaded and being checked." */
export function versionUploaded(status: number, version: Pick<DatasetVersion, "number">): string {
  return status === 202 ? `Version ${version.number} is uploaded and being checked.` : `Version ${version.number} is ready.`;
}
